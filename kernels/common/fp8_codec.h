// FP8 encode/decode: OCP E4M3 ("e4m3fn") and E5M2, round to nearest even.
//
// E4M3: bias 7, max 448, subnormals down to 2^-9, no infinity, NaN = S.1111.111.
// E5M2: bias 15, max 57344, subnormals down to 2^-16, IEEE-style Inf and NaN.
//
// Overflow: saturating mode clamps to +-max (like CUDA's __NV_SATFINITE, Inf
// included); non-saturating mode gives NaN (E4M3, which has no Inf) or Inf
// (E5M2), which is what ml_dtypes' casts do.
#pragma once

#include "host_device.h"

namespace fp8rl {

enum class Fp8Format : uint8_t { e4m3 = 0, e5m2 = 1 };

struct Fp8Traits {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  uint8_t max_code;  // largest finite magnitude code
  uint8_t nan_code;  // canonical positive NaN
  bool has_infinity;
  float max_value;
};

FP8RL_HD Fp8Traits fp8_traits(Fp8Format format) {
  if (format == Fp8Format::e4m3) return Fp8Traits{4, 3, 7, 0x7E, 0x7F, false, 448.0f};
  return Fp8Traits{5, 2, 15, 0x7B, 0x7E, true, 57344.0f};
}

FP8RL_HD float fp8_max_value(Fp8Format format) { return fp8_traits(format).max_value; }

// Shifts a significand right by `shift` (1..31) rounding to nearest even.
FP8RL_HD uint32_t shift_right_rne(uint32_t significand, int shift) {
  const uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

FP8RL_HD uint8_t fp8_overflow_code(const Fp8Traits& t, bool saturate) {
  if (saturate) return t.max_code;
  return t.has_infinity ? static_cast<uint8_t>(t.max_code + 1) : t.nan_code;
}

// Magnitude code of a finite, non-negative float given as bits.
FP8RL_HD uint8_t fp8_encode_magnitude(uint32_t abs_bits, const Fp8Traits& t, bool saturate) {
  const int min_normal_exponent = 1 - t.bias;
  const int max_exponent = (t.has_infinity ? (1 << t.exponent_bits) - 2 : (1 << t.exponent_bits) - 1) - t.bias;
  const int biased32 = static_cast<int>(abs_bits >> 23);
  if (biased32 == 0) return 0;  // fp32 zero or subnormal: far below half the smallest fp8 subnormal
  const int exponent = biased32 - 127;
  if (exponent > max_exponent) return fp8_overflow_code(t, saturate);
  const uint32_t significand = (abs_bits & 0x7FFFFFu) | 0x800000u;  // 24 bits, implicit one
  uint32_t code;
  if (exponent < min_normal_exponent) {
    // Subnormal target: count quanta of 2^(min_normal_exponent - mantissa_bits).
    const int shift = 23 - t.mantissa_bits + (min_normal_exponent - exponent);
    if (shift >= 25) return 0;
    code = shift_right_rne(significand, shift);  // may round up into the smallest normal: same bits
  } else {
    const uint32_t rounded = shift_right_rne(significand, 23 - t.mantissa_bits);
    // A carry out of the mantissa bumps the exponent field, which is exactly right.
    code = (static_cast<uint32_t>(exponent + t.bias) << t.mantissa_bits) + rounded - (1u << t.mantissa_bits);
  }
  if (code > t.max_code) return fp8_overflow_code(t, saturate);
  return static_cast<uint8_t>(code);
}

FP8RL_HD uint8_t fp8_encode(float x, Fp8Format format, bool saturate) {
  const Fp8Traits t = fp8_traits(format);
  const uint32_t bits = float_bits(x);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  if (is_nan_bits(bits)) return static_cast<uint8_t>(sign | t.nan_code);
  if (abs_bits == 0x7F800000u) return static_cast<uint8_t>(sign | fp8_overflow_code(t, saturate));
  return static_cast<uint8_t>(sign | fp8_encode_magnitude(abs_bits, t, saturate));
}

FP8RL_HD bool fp8_is_nan(uint8_t code, Fp8Format format) {
  const uint8_t magnitude = code & 0x7F;
  if (format == Fp8Format::e4m3) return magnitude == 0x7F;
  return magnitude > 0x7C;
}

FP8RL_HD float fp8_decode(uint8_t code, Fp8Format format) {
  const Fp8Traits t = fp8_traits(format);
  const uint32_t sign = static_cast<uint32_t>(code & 0x80) << 24;
  const uint32_t magnitude = code & 0x7Fu;
  const uint32_t mantissa = magnitude & ((1u << t.mantissa_bits) - 1u);
  const int exponent_field = static_cast<int>(magnitude >> t.mantissa_bits);
  if (fp8_is_nan(code, format)) return bits_float(sign | 0x7FC00000u);
  if (t.has_infinity && magnitude == static_cast<uint32_t>(t.max_code + 1)) return bits_float(sign | 0x7F800000u);
  if (exponent_field == 0) {
    // Subnormal: mantissa * 2^(1 - bias - mantissa_bits), exact in fp32.
    const uint32_t unit = static_cast<uint32_t>(127 + 1 - t.bias - t.mantissa_bits) << 23;
    return bits_float(sign | float_bits(static_cast<float>(mantissa) * bits_float(unit)));
  }
  const uint32_t biased32 = static_cast<uint32_t>(exponent_field - t.bias + 127);
  return bits_float(sign | (biased32 << 23) | (mantissa << (23 - t.mantissa_bits)));
}

}  // namespace fp8rl
