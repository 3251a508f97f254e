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
  const uint32_t round_up = static_cast<uint32_t>(rest > half) | (static_cast<uint32_t>(rest == half) & kept);
  return kept + (round_up & 1u);
}

FP8RL_HD uint32_t fp8_overflow_code(const Fp8Traits& t, bool saturate) {
  const uint32_t unsaturated = t.has_infinity ? t.max_code + 1u : t.nan_code;
  return saturate ? t.max_code : unsaturated;
}

// Rounded magnitude code of a non-NaN float given as |bits|, before the
// overflow check: values past the largest finite FP8 give codes > max_code.
// Written without branches (selects only) so that CPU loops vectorize and GPU
// warps do not diverge.
FP8RL_HD uint32_t fp8_unchecked_magnitude(uint32_t abs_bits, const Fp8Traits& t) {
  const int exponent = static_cast<int>(abs_bits >> 23) - 127;
  const uint32_t significand = (abs_bits & 0x7FFFFFu) | 0x800000u;  // fp32 subnormals round to 0 regardless
  // Below the smallest normal the target quantum stays 2^(1 - bias - mantissa_bits): shift further.
  const int below_normal = 1 - t.bias - exponent;
  const int shift = 23 - t.mantissa_bits + (below_normal > 0 ? below_normal : 0);
  const uint32_t rounded = shift_right_rne(significand, shift < 31 ? shift : 31);
  // rounded includes the implicit one (or a carry) at bit mantissa_bits, so adding it to
  // (biased exponent - 1) << mantissa_bits yields the code; subnormals have no exponent part.
  const int exponent_part = exponent + t.bias - 1;
  return (static_cast<uint32_t>(exponent_part > 0 ? exponent_part : 0) << t.mantissa_bits) + rounded;
}

FP8RL_HD uint8_t fp8_encode(float x, Fp8Format format, bool saturate) {
  const Fp8Traits t = fp8_traits(format);
  const uint32_t bits = float_bits(x);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const uint32_t code = fp8_unchecked_magnitude(abs_bits, t);
  uint32_t magnitude = code > t.max_code ? fp8_overflow_code(t, saturate) : code;  // +-Inf lands here too
  magnitude = abs_bits > 0x7F800000u ? t.nan_code : magnitude;
  return static_cast<uint8_t>(((bits >> 24) & 0x80u) | magnitude);
}

FP8RL_HD bool fp8_is_nan(uint8_t code, Fp8Format format) {
  const uint32_t magnitude = code & 0x7Fu;
  return format == Fp8Format::e4m3 ? magnitude == 0x7Fu : magnitude > 0x7Cu;
}

// Branch-free like fp8_encode: selects only, so decoding loops vectorize.
FP8RL_HD float fp8_decode(uint8_t code, Fp8Format format) {
  const Fp8Traits t = fp8_traits(format);
  const uint32_t sign = static_cast<uint32_t>(code & 0x80) << 24;
  const uint32_t magnitude = code & 0x7Fu;
  const uint32_t mantissa = magnitude & ((1u << t.mantissa_bits) - 1u);
  const uint32_t exponent_field = magnitude >> t.mantissa_bits;
  // Subnormal: mantissa * 2^(1 - bias - mantissa_bits), exact in fp32.
  const float subnormal_unit = bits_float(static_cast<uint32_t>(127 + 1 - t.bias - t.mantissa_bits) << 23);
  const uint32_t subnormal = float_bits(static_cast<float>(mantissa) * subnormal_unit);
  const uint32_t normal =
      ((exponent_field + static_cast<uint32_t>(127 - t.bias)) << 23) | (mantissa << (23 - t.mantissa_bits));
  uint32_t bits = exponent_field == 0 ? subnormal : normal;
  bits = (t.has_infinity & (magnitude == t.max_code + 1u)) ? 0x7F800000u : bits;
  bits = fp8_is_nan(code, format) ? 0x7FC00000u : bits;
  return bits_float(sign | bits);
}

}  // namespace fp8rl
