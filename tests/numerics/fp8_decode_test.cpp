// FP8 decoding: all 256 codes of E4M3 and E5M2.
//
// Oracles: ml_dtypes' decoding of every code (tests/oracles/fp8_oracle.py),
// compared bit for bit (so -0 keeps its sign; NaN compared as NaN-ness), and
// an independent float64 decoder written from the OCP bit fields
// (fp8_reference.h) plus a few hand-computed anchors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "numerics/fp8_reference.h"
#include "numerics/oracle_data.h"

namespace fp8rl::test {
namespace {

// Counts codes whose decoding differs from the ml_dtypes table, printing the first few.
int table_mismatches(Fp8Format format, const std::array<float, 256>& table) {
  int mismatches = 0;
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const float expected = table[code];
    const float actual = fp8_decode(code, format);
    const bool ok = std::isnan(expected) ? std::isnan(actual) : bits_of(actual) == bits_of(expected);
    const bool nan_flag_ok = fp8_is_nan(code, format) == static_cast<bool>(std::isnan(expected));
    if (ok && nan_flag_ok) continue;
    if (++mismatches <= 10)
      std::printf("%s code 0x%02X: ml_dtypes %a, fp8_decode %a, fp8_is_nan %d\n", format_name(format), c,
                  static_cast<double>(expected), static_cast<double>(actual), fp8_is_nan(code, format));
  }
  return mismatches;
}

void check_against_oracle(Fp8Format format) {
  INFO(std::string(format_name(format)));
  const OracleData& oracle = oracle_data();
  CHECK(table_mismatches(format, format == Fp8Format::e4m3 ? oracle.e4m3_table : oracle.e5m2_table) == 0);
}

// Same 256 codes against the float64 field decoder (independent of ml_dtypes too).
void check_against_field_decoder(Fp8Format format) {
  int nans = 0, infs = 0, mismatches = 0;
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const float actual = fp8_decode(code, format);
    if (ref_is_nan(code, format)) {
      nans += 1;
      mismatches += !std::isnan(actual);
    } else if (ref_is_inf(code, format)) {
      infs += 1;
      mismatches += !(std::isinf(actual) && std::signbit(actual) == ((code & 0x80) != 0));
    } else {
      const double expected = ref_decode(code, format);
      mismatches += !(static_cast<double>(actual) == expected && std::signbit(actual) == ((code & 0x80) != 0));
    }
  }
  CHECK(mismatches == 0);
  CHECK(nans == (format == Fp8Format::e4m3 ? 2 : 6));
  CHECK(infs == (format == Fp8Format::e4m3 ? 0 : 2));
}

// One test case for both formats: each case pays for a Python start-up.
TEST_CASE("numerics: fp8 decode: all 256 codes of E4M3 and E5M2 equal ml_dtypes") {
  check_against_oracle(Fp8Format::e4m3);
  check_against_oracle(Fp8Format::e5m2);
}

TEST_CASE("numerics: fp8 decode: all codes equal the float64 bit-field decoder") {
  check_against_field_decoder(Fp8Format::e4m3);
  check_against_field_decoder(Fp8Format::e5m2);
}

TEST_CASE("numerics: fp8 decode: hand-computed anchors") {
  CHECK(fp8_decode(0x38, Fp8Format::e4m3) == 1.0f);  // 0.0111.000: 2^(7-7)
  CHECK(fp8_decode(0x7E, Fp8Format::e4m3) == 448.0f);
  CHECK(fp8_decode(0xFE, Fp8Format::e4m3) == -448.0f);
  CHECK(fp8_decode(0x08, Fp8Format::e4m3) == std::ldexp(1.0f, -6));  // min normal
  CHECK(fp8_decode(0x01, Fp8Format::e4m3) == std::ldexp(1.0f, -9));  // min subnormal
  CHECK(fp8_decode(0x07, Fp8Format::e4m3) == 7 * std::ldexp(1.0f, -9));
  CHECK(std::signbit(fp8_decode(0x80, Fp8Format::e4m3)));
  CHECK(fp8_decode(0x80, Fp8Format::e4m3) == 0.0f);
  CHECK(std::isnan(fp8_decode(0x7F, Fp8Format::e4m3)));
  CHECK(std::isnan(fp8_decode(0xFF, Fp8Format::e4m3)));
  CHECK(fp8_decode(0x3C, Fp8Format::e5m2) == 1.0f);  // 0.01111.00
  CHECK(fp8_decode(0x7B, Fp8Format::e5m2) == 57344.0f);
  CHECK(fp8_decode(0x04, Fp8Format::e5m2) == std::ldexp(1.0f, -14));
  CHECK(fp8_decode(0x01, Fp8Format::e5m2) == std::ldexp(1.0f, -16));
  CHECK(fp8_decode(0x7C, Fp8Format::e5m2) == INFINITY);
  CHECK(fp8_decode(0xFC, Fp8Format::e5m2) == -INFINITY);
  CHECK(std::isnan(fp8_decode(0x7D, Fp8Format::e5m2)));
  CHECK(fp8_max_value(Fp8Format::e4m3) == 448.0f);
  CHECK(fp8_max_value(Fp8Format::e5m2) == 57344.0f);
}

}  // namespace
}  // namespace fp8rl::test
