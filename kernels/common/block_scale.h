// One block's scale and the per-element quantization that uses it.
//
// The scale is the dequantization multiplier (value ~= decode(code) * scale),
// the convention of cuBLASLt's VEC128_32F / BLK128x128_32F scale modes and of
// DeepGEMM. CPU and CUDA call these same functions, so they quantize
// bit-identically.
#pragma once

#include "fp8_codec.h"

namespace fp8rl {

enum class ScaleFormat : uint8_t { fp32 = 0, pow2 = 1 };

constexpr float kSmallestNormalFloat = 1.17549435e-38f;  // 2^-126

// |x| as bits when x is finite, else 0. NaN and +-Inf say nothing about a
// block's range and would poison every other element (an Inf amax quantizes
// the whole block to zero), so amax skips them. Non-negative floats order like
// their bits, so an amax can also be reduced as integers (which vectorizes).
FP8RL_HD uint32_t finite_magnitude_bits(float x) {
  const uint32_t abs_bits = float_bits(x) & 0x7FFFFFFFu;
  return abs_bits & (0u - static_cast<uint32_t>(abs_bits < 0x7F800000u));  // a mask, not a select: GCC 12 vectorizes it
}

// Running amax over the finite values of a block.
FP8RL_HD float amax_update(float amax, float x) {
  const uint32_t magnitude = finite_magnitude_bits(x);
  return magnitude > float_bits(amax) ? bits_float(magnitude) : amax;
}

// Smallest power of two p with amax <= max_value * p, computed exactly on the
// exponents (a rounded amax / max_value could land one binade too low).
FP8RL_HD float pow2_scale(float amax, float max_value) {
  const uint32_t amax_bits = float_bits(amax);
  const uint32_t max_bits = float_bits(max_value);
  int exponent = static_cast<int>(amax_bits >> 23) - static_cast<int>(max_bits >> 23);
  if ((amax_bits & 0x7FFFFFu) > (max_bits & 0x7FFFFFu)) exponent += 1;
  if (exponent < -126) exponent = -126;
  if (exponent > 127) exponent = 127;
  return bits_float(static_cast<uint32_t>(exponent + 127) << 23);
}

// Scale of a block from the amax of its finite values.
//  - amax == 0 (all zeros, or nothing finite): scale 1, so every code is 0
//    (or the saturated/NaN code of a non-finite input) and decodes exactly.
//  - tiny amax: the scale is floored at 2^-126 so that 1/scale stays finite.
FP8RL_HD float block_scale(float amax, Fp8Format format, ScaleFormat scale_format) {
  if (!(amax > 0.0f)) return 1.0f;
  const float max_value = fp8_max_value(format);
  if (amax < kSmallestNormalFloat) amax = kSmallestNormalFloat;
  if (scale_format == ScaleFormat::pow2) return pow2_scale(amax, max_value);
  const float scale = div_rn(amax, max_value);
  return scale < kSmallestNormalFloat ? kSmallestNormalFloat : scale;
}

FP8RL_HD uint8_t quantize_value(float x, float scale, Fp8Format format, bool saturate) {
  return fp8_encode(div_rn(x, scale), format, saturate);
}

FP8RL_HD float dequantize_value(uint8_t code, float scale, Fp8Format format) {
  return fp8_decode(code, format) * scale;
}

}  // namespace fp8rl
