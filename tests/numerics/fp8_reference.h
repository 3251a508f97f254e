// Hand-derived facts about the FP8 formats, in float64, for the tests.
//
// Written from the OCP FP8 spec, not from kernels/common, so the tests do not
// inherit a mistake of the code under test:
//   E4M3 (e4m3fn): 1.4.3, bias 7, max 448 = 0x7E, NaN = S.1111.111, no Inf.
//   E5M2:          1.5.2, bias 15, max 57344 = 0x7B, Inf = S.11111.00, NaN = S.11111.{01,10,11}.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/fp8_codec.h"
#include "support/float_bits.h"

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

inline bool ref_is_inf(uint8_t code, Fp8Format format) { return format == Fp8Format::e5m2 && (code & 0x7F) == 0x7C; }

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

// Magnitudes of codes 0 .. max_code + 1 in increasing order. The last one is
// what the bit fields give the code after max (480 for E4M3, whose code is
// NaN; 65536 for E5M2, whose code is Inf): round-to-nearest-even needs it as
// max's upper neighbour to place the overflow tie (464 -> 448, 61440 -> Inf).
inline const std::vector<double>& magnitude_grid(Fp8Format format) {
  static const std::vector<double> grids[2] = {[] {
                                                 std::vector<double> g;
                                                 for (int c = 0; c <= 0x7F; ++c)
                                                   g.push_back(ref_decode(static_cast<uint8_t>(c), Fp8Format::e4m3));
                                                 return g;
                                               }(),
                                               [] {
                                                 std::vector<double> g;
                                                 for (int c = 0; c <= 0x7C; ++c)
                                                   g.push_back(ref_decode(static_cast<uint8_t>(c), Fp8Format::e5m2));
                                                 return g;
                                               }()};
  return grids[format == Fp8Format::e4m3 ? 0 : 1];
}

// Round to nearest, ties to even code, of an exact value v, by search on the
// explicit grid (no bit tricks shared with the code under test). Overflow:
// +-max when saturating, else NaN (E4M3) or +-Inf (E5M2).
inline uint8_t ref_encode(double v, Fp8Format format, bool saturate) {
  const Fp8Facts f = facts(format);
  if (std::isnan(v)) return format == Fp8Format::e4m3 ? 0x7F : 0x7E;
  const std::vector<double>& grid = magnitude_grid(format);
  const double a = std::fabs(v);
  size_t k = grid.size() - 1;  // overflow unless found below
  if (a < grid.back()) {
    const size_t lo = static_cast<size_t>(std::upper_bound(grid.begin(), grid.end(), a) - grid.begin()) - 1;
    const double below = a - grid[lo], above = grid[lo + 1] - a;  // exact for float-representable a
    k = below < above ? lo : below > above ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  }
  uint8_t code = static_cast<uint8_t>(k);
  if (k > f.max_code) code = saturate ? f.max_code : static_cast<uint8_t>(f.max_code + 1);  // NaN 0x7F / Inf 0x7C
  return static_cast<uint8_t>((std::signbit(v) ? 0x80 : 0x00) | code);
}

inline const char* format_name(Fp8Format format) { return format == Fp8Format::e4m3 ? "e4m3" : "e5m2"; }

}  // namespace fp8rl::test
