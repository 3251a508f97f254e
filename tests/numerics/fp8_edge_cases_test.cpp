// FP8 encoding of hand-picked corner values, expectations derived by hand from
// the OCP spec (no ml_dtypes, no code under test). A second, human-readable
// oracle for the cases most likely to be wrong: ties to even at every
// boundary, the overflow ties (464 for E4M3, 61440 for E5M2), subnormals of
// both formats, fp32 subnormals, -0, +-Inf, NaN.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <string>

#include "numerics/fp8_reference.h"

namespace fp8rl::test {
namespace {

constexpr uint8_t kNan = 0xFF;  // marker: "any NaN code of the format"

struct EdgeCase {
  const char* what;
  float x;
  uint8_t e4m3, e4m3_sat, e5m2, e5m2_sat;
};

float p2(int e) { return std::ldexp(1.0f, e); }
float up(float x) { return std::nextafter(x, INFINITY); }
float down(float x) { return std::nextafter(x, -INFINITY); }

void check_one(const EdgeCase& c, Fp8Format format, bool saturate, uint8_t expected) {
  const uint8_t actual = fp8_encode(c.x, format, saturate);
  const std::string mode = std::string(format_name(format)) + (saturate ? " saturating" : " non-saturating");
  INFO(std::string(c.what), " x=", c.x, " ", mode, " expected=", static_cast<int>(expected),
       " actual=", static_cast<int>(actual));
  if (expected == kNan)
    CHECK(ref_is_nan(actual, format));
  else
    CHECK(actual == expected);
}

TEST_CASE("numerics: fp8 encode: hand-derived corner cases") {
  const EdgeCase cases[] = {
      {"1.0", 1.0f, 0x38, 0x38, 0x3C, 0x3C},
      {"1+1/16: E4M3 tie 1.0|1.125 -> even 1.0", 1.0625f, 0x38, 0x38, 0x3C, 0x3C},
      {"1+3/16: E4M3 tie 1.125|1.25 -> even 1.25", 1.1875f, 0x3A, 0x3A, 0x3D, 0x3D},
      {"1.125: E5M2 tie 1.0|1.25 -> even 1.0", 1.125f, 0x39, 0x39, 0x3C, 0x3C},
      {"1.375: E5M2 tie 1.25|1.5 -> even 1.5", 1.375f, 0x3B, 0x3B, 0x3E, 0x3E},
      {"448 = E4M3 max", 448.0f, 0x7E, 0x7E, 0x5F, 0x5F},
      {"464: E4M3 tie 448|480(NaN) -> even 448", 464.0f, 0x7E, 0x7E, 0x5F, 0x5F},
      {"464+ulp: E4M3 overflow", up(464.0f), kNan, 0x7E, 0x5F, 0x5F},
      {"480: E4M3 overflow; E5M2 tie 448|512 -> 512", 480.0f, kNan, 0x7E, 0x60, 0x60},
      {"-480", -480.0f, kNan, 0xFE, 0xE0, 0xE0},
      {"57344 = E5M2 max", 57344.0f, kNan, 0x7E, 0x7B, 0x7B},
      {"61440: E5M2 tie 57344|Inf -> even Inf", 61440.0f, kNan, 0x7E, 0x7C, 0x7B},
      {"61440-ulp: E5M2 -> 57344", down(61440.0f), kNan, 0x7E, 0x7B, 0x7B},
      {"-61440", -61440.0f, kNan, 0xFE, 0xFC, 0xFB},
      {"FLT_MAX", FLT_MAX, kNan, 0x7E, 0x7C, 0x7B},
      {"+Inf", INFINITY, kNan, 0x7E, 0x7C, 0x7B},
      {"-Inf", -INFINITY, kNan, 0xFE, 0xFC, 0xFB},
      {"NaN", NAN, kNan, kNan, kNan, kNan},
      {"-0", -0.0f, 0x80, 0x80, 0x80, 0x80},
      {"2^-6 = E4M3 min normal", p2(-6), 0x08, 0x08, 0x24, 0x24},
      {"2^-9 = E4M3 min subnormal", p2(-9), 0x01, 0x01, 0x18, 0x18},
      {"2^-10: half E4M3 min subnormal, tie -> 0", p2(-10), 0x00, 0x00, 0x14, 0x14},
      {"2^-10+ulp -> E4M3 min subnormal", up(p2(-10)), 0x01, 0x01, 0x14, 0x14},
      {"-2^-10: -> -0", -p2(-10), 0x80, 0x80, 0x94, 0x94},
      {"1.5*2^-9: tie 1|2 quanta -> 2", 1.5f * p2(-9), 0x02, 0x02, 0x1A, 0x1A},
      {"2.5*2^-9: tie 2|3 quanta -> 2", 2.5f * p2(-9), 0x02, 0x02, 0x1D, 0x1D},
      {"7.5*2^-9: tie 7 quanta|min normal -> min normal", 7.5f * p2(-9), 0x08, 0x08, 0x24, 0x24},
      {"2^-14 = E5M2 min normal", p2(-14), 0x00, 0x00, 0x04, 0x04},
      {"2^-16 = E5M2 min subnormal", p2(-16), 0x00, 0x00, 0x01, 0x01},
      {"2^-17: half E5M2 min subnormal, tie -> 0", p2(-17), 0x00, 0x00, 0x00, 0x00},
      {"2^-17+ulp -> E5M2 min subnormal", up(p2(-17)), 0x00, 0x00, 0x01, 0x01},
      {"1.5*2^-16: tie 1|2 quanta -> 2", 1.5f * p2(-16), 0x00, 0x00, 0x02, 0x02},
      {"2^-149: fp32 min subnormal", p2(-149), 0x00, 0x00, 0x00, 0x00},
      {"-2^-149", -p2(-149), 0x80, 0x80, 0x80, 0x80},
      {"2^-126: fp32 min normal", p2(-126), 0x00, 0x00, 0x00, 0x00},
  };
  for (const EdgeCase& c : cases) {
    check_one(c, Fp8Format::e4m3, false, c.e4m3);
    check_one(c, Fp8Format::e4m3, true, c.e4m3_sat);
    check_one(c, Fp8Format::e5m2, false, c.e5m2);
    check_one(c, Fp8Format::e5m2, true, c.e5m2_sat);
  }
}

}  // namespace
}  // namespace fp8rl::test
