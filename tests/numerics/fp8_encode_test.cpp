// FP8 encoding of > 10^6 float32 values against ml_dtypes.
//
// Oracle: ml_dtypes' float8_e4m3fn / float8_e5m2 casts (tests/oracles/fp8_oracle.py),
// which round to nearest even and never saturate. The inputs mix random bit
// patterns, Gaussians over 90 binades, values next to powers of two, exact
// FP8 rounding midpoints and their float32 neighbours, and hand-listed corners
// (subnormals of both formats and of fp32, 448/464/480, 57344/61440, NaN, Inf, -0).
//  - non-saturating: equal to ml_dtypes bit for bit; NaN compared as NaN-ness.
//  - saturating: equal where ml_dtypes is finite; where it overflowed (NaN for
//    a finite input in e4m3fn, Inf in e5m2) or the input is +-Inf: +-max code.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <initializer_list>

#include "numerics/fp8_reference.h"
#include "numerics/oracle_data.h"

namespace fp8rl::test {
namespace {

struct Coverage {
  long overflows = 0;   // finite inputs ml_dtypes sends to NaN/Inf
  long nans = 0;        // NaN inputs
  long subnormals = 0;  // nonzero results with exponent field 0
  long total = 0;
};

// Saturating expectation derived from ml_dtypes' non-saturating code.
uint8_t saturated_expectation(uint8_t oracle, float x, Fp8Format format) {
  if (std::isnan(x)) return oracle;
  const bool overflowed = ref_is_nan(oracle, format) || ref_is_inf(oracle, format);
  if (!overflowed) return oracle;
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0x00) | facts(format).max_code);
}

bool same_code(uint8_t expected, uint8_t actual, Fp8Format format) {
  if (ref_is_nan(expected, format)) return ref_is_nan(actual, format);
  return expected == actual;
}

void count(Coverage& coverage, float x, uint8_t oracle, Fp8Format format) {
  coverage.total += 1;
  coverage.nans += std::isnan(x);
  coverage.overflows += std::isfinite(x) && (ref_is_nan(oracle, format) || ref_is_inf(oracle, format));
  const int exponent_field = (oracle & 0x7F) >> facts(format).mantissa_bits;
  coverage.subnormals += exponent_field == 0 && (oracle & 0x7F) != 0;
}

long encode_mismatches(Fp8Format format, bool saturate, Coverage& coverage) {
  const OracleData& oracle = oracle_data();
  const std::vector<uint8_t>& codes = format == Fp8Format::e4m3 ? oracle.e4m3 : oracle.e5m2;
  long mismatches = 0;
  for (size_t i = 0; i < codes.size(); ++i) {
    const float x = float_of(oracle.input_bits[i]);
    count(coverage, x, codes[i], format);
    const uint8_t expected = saturate ? saturated_expectation(codes[i], x, format) : codes[i];
    const uint8_t actual = fp8_encode(x, format, saturate);
    if (same_code(expected, actual, format)) continue;
    if (++mismatches <= 10)
      std::printf("%s %s: x = %a (0x%08X, %s): expected 0x%02X, fp8_encode 0x%02X\n", format_name(format),
                  saturate ? "saturating" : "non-saturating", static_cast<double>(x), oracle.input_bits[i],
                  category_name(oracle.category[i]), expected, actual);
  }
  return mismatches;
}

void check_encoding(Fp8Format format, bool saturate) {
  Coverage coverage;
  CHECK(encode_mismatches(format, saturate, coverage) == 0);
  // The comparison only means something if the data reach every path.
  CHECK(coverage.total >= 1000000);
  CHECK(coverage.overflows >= 1000);
  CHECK(coverage.nans >= 1000);
  CHECK(coverage.subnormals >= 1000);
}

TEST_CASE("numerics: fp8 encode: E4M3 non-saturating equals ml_dtypes") { check_encoding(Fp8Format::e4m3, false); }
TEST_CASE("numerics: fp8 encode: E4M3 saturating equals ml_dtypes, overflow to +-448") {
  check_encoding(Fp8Format::e4m3, true);
}
TEST_CASE("numerics: fp8 encode: E5M2 non-saturating equals ml_dtypes") { check_encoding(Fp8Format::e5m2, false); }
TEST_CASE("numerics: fp8 encode: E5M2 saturating equals ml_dtypes, overflow to +-57344") {
  check_encoding(Fp8Format::e5m2, true);
}

// Validates the test-side rounder (fp8_reference.h) that block_error_test uses
// as the exact contract of quantize_value: it must itself agree with ml_dtypes.
TEST_CASE("numerics: test oracle: the float64 grid rounder agrees with ml_dtypes") {
  const OracleData& oracle = oracle_data();
  long mismatches = 0;
  for (Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const std::vector<uint8_t>& codes = format == Fp8Format::e4m3 ? oracle.e4m3 : oracle.e5m2;
    for (size_t i = 0; i < codes.size(); ++i) {
      const float x = float_of(oracle.input_bits[i]);
      mismatches += !same_code(codes[i], ref_encode(static_cast<double>(x), format, false), format);
      mismatches += !same_code(saturated_expectation(codes[i], x, format),
                               ref_encode(static_cast<double>(x), format, true), format);
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace
}  // namespace fp8rl::test
