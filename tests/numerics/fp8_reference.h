// Hand-derived facts about the FP8 formats, in float64, for the tests.
//
// Written from the OCP FP8 spec, not from kernels/common, so the tests do not
// inherit a mistake of the code under test:
//   E4M3 (e4m3fn): 1.4.3, bias 7, max 448 = 0x7E, NaN = S.1111.111, no Inf.
//   E5M2:          1.5.2, bias 15, max 57344 = 0x7B, Inf = S.11111.00, NaN = S.11111.{01,10,11}.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/common/fp8_codec.h"

namespace fp8rl::test {

struct Fp8Facts {
  int mantissa_bits;
  int bias;
  int min_normal_exponent;  // 1 - bias
  double max_value;
  uint8_t max_code;
  bool has_infinity;
};

inline Fp8Facts facts(Fp8Format format) {
  if (format == Fp8Format::e4m3) return {3, 7, -6, 448.0, 0x7E, false};
  return {2, 15, -14, 57344.0, 0x7B, true};
}

inline bool ref_is_nan(uint8_t code, Fp8Format format) {
  const int magnitude = code & 0x7F;
  return format == Fp8Format::e4m3 ? magnitude == 0x7F : magnitude > 0x7C;
}

inline bool ref_is_inf(uint8_t code, Fp8Format format) {
  return format == Fp8Format::e5m2 && (code & 0x7F) == 0x7C;
}

// Value of a finite code, exact in float64, from its bit fields.
inline double ref_decode(uint8_t code, Fp8Format format) {
  const Fp8Facts f = facts(format);
  const int magnitude = code & 0x7F;
  const int mantissa = magnitude & ((1 << f.mantissa_bits) - 1);
  const int exponent_field = magnitude >> f.mantissa_bits;
  const double value = exponent_field == 0
                           ? std::ldexp(mantissa, f.min_normal_exponent - f.mantissa_bits)
                           : std::ldexp((1 << f.mantissa_bits) + mantissa, exponent_field - f.bias - f.mantissa_bits);
  return (code & 0x80) ? -value : value;
}

// Half the spacing of the format's grid around |q|: the largest error of
// round-to-nearest at that magnitude. Below the smallest normal the spacing
// is the fixed subnormal quantum, so the bound becomes absolute there.
inline double half_ulp(double q, Fp8Format format) {
  const Fp8Facts f = facts(format);
  int exponent = 0;
  std::frexp(std::fabs(q), &exponent);  // |q| in [2^(exponent-1), 2^exponent)
  const int binade = std::fabs(q) < std::ldexp(1.0, f.min_normal_exponent) ? f.min_normal_exponent : exponent - 1;
  return std::ldexp(1.0, binade - f.mantissa_bits - 1);
}

inline uint32_t bits_of(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

inline float float_of(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

inline const char* format_name(Fp8Format format) { return format == Fp8Format::e4m3 ? "e4m3" : "e5m2"; }

}  // namespace fp8rl::test
