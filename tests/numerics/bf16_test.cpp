// BF16 conversion.
//
// Oracles: ml_dtypes' bfloat16 cast (round to nearest even; overflow -> Inf) on
// the same > 10^6 float32 inputs as the FP8 tests (tests/oracles/fp8_oracle.py),
// NaN compared as NaN-ness; the decode is checked on all 65536 codes against
// its definition (the code is the top half of a float32); and hand-derived corners.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>

#include "kernels/common/bf16_codec.h"
#include "numerics/fp8_reference.h"
#include "numerics/oracle_data.h"

namespace fp8rl::test {
namespace {

bool bf16_is_nan(uint16_t code) { return (code & 0x7FFF) > 0x7F80; }
bool bf16_is_inf(uint16_t code) { return (code & 0x7FFF) == 0x7F80; }

TEST_CASE("numerics: bf16 encode: round to nearest even equals ml_dtypes bfloat16") {
  const OracleData& oracle = oracle_data();
  long mismatches = 0, overflows = 0, nans = 0;
  for (size_t i = 0; i < oracle.bf16.size(); ++i) {
    const float x = float_of(oracle.input_bits[i]);
    const uint16_t expected = oracle.bf16[i];
    const uint16_t actual = bf16_encode(x);
    nans += std::isnan(x);
    overflows += std::isfinite(x) && bf16_is_inf(expected);
    const bool ok = bf16_is_nan(expected) ? bf16_is_nan(actual) : actual == expected;
    if (!ok && ++mismatches <= 10)
      std::printf("bf16: x = %a (0x%08X, %s): ml_dtypes 0x%04X, bf16_encode 0x%04X\n", static_cast<double>(x),
                  oracle.input_bits[i], category_name(oracle.category[i]), expected, actual);
  }
  CHECK(mismatches == 0);
  CHECK(oracle.bf16.size() >= 1000000);
  CHECK(overflows >= 100);  // finite values that round up to Inf were exercised
  CHECK(nans >= 100);
}

TEST_CASE("numerics: bf16 decode: every code is the top half of a float32") {
  long mismatches = 0;
  for (uint32_t code = 0; code < 65536; ++code) {
    const float actual = bf16_decode(static_cast<uint16_t>(code));
    const uint32_t expected = code << 16;
    const bool ok = bf16_is_nan(static_cast<uint16_t>(code)) ? std::isnan(actual) : bits_of(actual) == expected;
    mismatches += !ok;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("numerics: bf16 encode: hand-derived corners") {
  CHECK(bf16_encode(1.0f) == 0x3F80);
  CHECK(bf16_encode(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);      // tie -> even (down)
  CHECK(bf16_encode(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);  // tie -> even (up)
  CHECK(bf16_encode(float_of(0x3F80FFFF)) == 0x3F81);             // above the tie
  CHECK(bf16_encode(float_of(0x7F7F7FFF)) == 0x7F7F);             // just below the overflow tie
  CHECK(bf16_encode(float_of(0x7F7F8000)) == 0x7F80);             // overflow tie -> even = Inf
  CHECK(bf16_encode(FLT_MAX) == 0x7F80);
  CHECK(bf16_encode(-FLT_MAX) == 0xFF80);
  CHECK(bf16_encode(INFINITY) == 0x7F80);
  CHECK(bf16_encode(-INFINITY) == 0xFF80);
  CHECK(bf16_encode(-0.0f) == 0x8000);
  CHECK(bf16_encode(float_of(0x00008000)) == 0x0000);  // subnormal tie -> even
  CHECK(bf16_encode(float_of(0x00018000)) == 0x0002);
  CHECK(bf16_is_nan(bf16_encode(NAN)));
  CHECK(bf16_is_nan(bf16_encode(float_of(0x7F800001))));  // payload only in the dropped half
  CHECK(bf16_is_nan(bf16_encode(float_of(0xFFFFFFFF))));
  CHECK(bf16_round(3.0f) == 3.0f);
}

}  // namespace
}  // namespace fp8rl::test
