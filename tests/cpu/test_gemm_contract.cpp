// The CPU GEMM contract (kernels/cpu/gemm_microkernel.h) checked bit for bit:
// the public GEMMs at every SIMD level against the scalar float64 model in
// gemm_reference.h (contract_gemm_bf16 / contract_gemm_fp8), FTZ/DAZ corner
// cases with results derived by hand, and the flushing arithmetic of
// kernels/cpu/ftz_arithmetic.h (the portable kernels' VDPBF16PS) against the
// hardware: VDPBF16PS itself where the CPU has it, and MXCSR FTZ|DAZ
// arithmetic (what the AVX2 and AVX-512 kernels run on).
//
// The model is exact for any operands: products are exact in float64 and each
// rounding goes through TwoSum and round-to-odd (see gemm_reference.h). On
// small-range inputs the float64 sums are exact by themselves (the model is
// then plain "double sum, rounded to float"): BF16 values with exponents in
// [-6, 6] are multiples of 2^-13, so every product, lane and partial sum is a
// multiple of 2^-26 below 2^25 in magnitude for K <= 1100, 51 bits; E4M3 code
// products are multiples of 2^-18 and a block's sum stays below 2^26. The
// promotions with full-mantissa scales and the wide-range cases need the
// round-to-odd step.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <tuple>

#include "cpu/gemm_test_support.h"
#include "kernels/cpu/ftz_arithmetic.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FP8RL_TEST_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace fp8rl::test {
namespace {

// The generator's next 32 bits (its result type is wider on LP64).
uint32_t next(std::mt19937& rng) { return static_cast<uint32_t>(rng()); }

std::string hex(uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", bits);
  return text;
}

// ---- inputs -----------------------------------------------------------------

// BF16 bits with a random sign, a uniform exponent in [min_exponent,
// max_exponent] and 7 random mantissa bits; one in 16 a zero of either sign.
std::vector<uint16_t> bf16_in_range(int64_t count, int min_exponent, int max_exponent, std::mt19937& rng) {
  std::uniform_int_distribution<int> exponent(min_exponent, max_exponent);
  std::vector<uint16_t> bits(static_cast<size_t>(count));
  for (uint16_t& b : bits) {
    const uint32_t r = next(rng);
    const uint32_t sign = (r & 1u) << 15, mantissa = (r >> 1) & 0x7Fu;
    b = static_cast<uint16_t>((r >> 8) % 16 == 0 ? sign
                                                 : sign | static_cast<uint32_t>(exponent(rng) + 127) << 7 | mantissa);
  }
  return bits;
}

// Exact BF16 bits of x (which must be a BF16 value).
uint16_t bf16_of(float x) {
  const uint32_t bits = bits_of(x);
  REQUIRE((bits & 0xFFFFu) == 0u);
  return static_cast<uint16_t>(bits >> 16);
}

// ---- checks -----------------------------------------------------------------

// c (FP32 output) against the model, bit for bit (NaN as the canonical NaN);
// reports the first difference.
void check_f32_outputs(const std::vector<float>& model, const std::vector<float>& c, int64_t n) {
  REQUIRE(model.size() == c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    if (bits_of(c[i]) == f32_output_bits(model[i])) continue;
    FAIL_CHECK("C[" << static_cast<int64_t>(i) / n << ", " << static_cast<int64_t>(i) % n << "] = " << c[i] << " ("
                    << hex(bits_of(c[i])) << "), contract " << model[i] << " (" << hex(f32_output_bits(model[i]))
                    << ")");
    return;
  }
}

// c (BF16 output) against the model rounded to BF16 once.
void check_bf16_outputs(const std::vector<float>& model, const std::vector<uint16_t>& c, int64_t n) {
  REQUIRE(model.size() == c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] == bf16_output_bits(model[i])) continue;
    FAIL_CHECK("C[" << static_cast<int64_t>(i) / n << ", " << static_cast<int64_t>(i) % n << "] = " << hex(c[i])
                    << ", contract " << model[i] << " rounds to " << hex(bf16_output_bits(model[i])));
    return;
  }
}

// Both GEMM outputs of every level against the model.
void check_bf16_gemm(const std::vector<uint16_t>& a, const std::vector<uint16_t>& w, int64_t m, int64_t n, int64_t k) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  const std::vector<float> model = contract_gemm_bf16(a, w, m, n, k);
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
    check_f32_outputs(model, gemm_bf16_out<float>(*backend, a, w, m, n, k), n);
    check_bf16_outputs(model, gemm_bf16_out<uint16_t>(*backend, a, w, m, n, k), n);
  }
}

void check_fp8_gemm(const Fp8Data& a, const Fp8Data& w) {
  CAPTURE(a.rows);
  CAPTURE(w.rows);
  CAPTURE(a.cols);
  CAPTURE(static_cast<int>(w.layout));
  const std::vector<float> model = contract_gemm_fp8(a, w);
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
    check_f32_outputs(model, gemm_fp8_f32(*backend, a, w), w.rows);
    check_bf16_outputs(model, gemm_fp8_bf16(*backend, a, w), w.rows);
  }
}

// ---- small cases against the model ------------------------------------------------

struct Shape {
  int64_t m, n;
};

// M = 1 takes the single-row kernels; 2, 3, 5, 9 whole micro-tiles (2 or 4
// rows) and tails of every height; 130 two row blocks (A packed once and
// shared); N = 400 (below) more than one W panel. K: one element, both sides
// of a group (32) and of a block (128), partial blocks, and past one depth
// chunk (1024).
const int64_t kDepths[] = {1, 31, 33, 127, 129, 300, 1100};
const Shape kShapes[] = {{1, 37}, {2, 5}, {3, 13}, {5, 24}, {9, 7}, {130, 3}};

TEST_CASE("gemm_bf16 is the contract bit for bit at every level") {
  std::mt19937 rng(61);
  for (const int64_t k : kDepths)
    for (const Shape s : kShapes) {
      // Small-range values, on which every float64 sum of the model is exact
      // (see the top), and unit normals (wider range, more rounding).
      check_bf16_gemm(bf16_in_range(s.m * k, -6, 6, rng), bf16_in_range(s.n * k, -6, 6, rng), s.m, s.n, k);
      check_bf16_gemm(random_bf16(s.m * k, rng), random_bf16(s.n * k, rng), s.m, s.n, k);
    }
  check_bf16_gemm(random_bf16(3 * 33, rng), random_bf16(400 * 33, rng), 3, 400, 33);
  check_bf16_gemm(random_bf16(1 * 33, rng), random_bf16(400 * 33, rng), 1, 400, 33);
}

TEST_CASE("gemm_fp8 is the contract bit for bit at every level") {
  // Every finite code; scales with full 24-bit mantissas over 15 binades, so
  // the scale products and the promotion FMAs round.
  std::mt19937 rng(62);
  bool block_layout = false;
  for (const int64_t k : kDepths)
    for (const Shape s : kShapes) {
      block_layout = !block_layout;
      const Fp8Data a = random_fp8(s.m, k, BlockLayout::tile_1x128, rng);
      check_fp8_gemm(a, random_fp8(s.n, k, block_layout ? BlockLayout::block_128x128 : BlockLayout::tile_1x128, rng));
    }
  check_fp8_gemm(random_fp8(3, 33, BlockLayout::tile_1x128, rng), random_fp8(400, 33, BlockLayout::block_128x128, rng));
  check_fp8_gemm(random_fp8(1, 33, BlockLayout::tile_1x128, rng), random_fp8(400, 33, BlockLayout::tile_1x128, rng));
}

// ---- large cases ------------------------------------------------------------

// Every output within error_bound of the float64 product of the unquantized
// (for FP8: dequantized) inputs, besides being the contract's bits.
void check_within_bound(const std::vector<float>& c, const Reference& exact, int64_t k) {
  for (size_t i = 0; i < c.size(); ++i) {
    const double error = std::fabs(static_cast<double>(c[i]) - exact.value[i]);
    if (error <= error_bound(k, exact.scale[i])) continue;
    FAIL_CHECK("C[" << i << "] = " << c[i] << ", float64 " << exact.value[i] << ", error " << error << " > bound "
                    << error_bound(k, exact.scale[i]));
    return;
  }
}

TEST_CASE("large GEMMs are the contract's bits and within the error bound of the float64 product") {
  const int64_t m = 40, n = 100, k = 2100;  // three depth chunks, a partial last block
  std::mt19937 rng(63);
  SUBCASE("BF16") {
    const std::vector<uint16_t> a = random_bf16(m * k, rng), w = random_bf16(n * k, rng);
    const std::vector<float> model = contract_gemm_bf16(a, w, m, n, k);
    const Reference exact = reference_gemm(bf16_reference(a), bf16_reference(w), m, n, k);
    check_within_bound(model, exact, k);
    for (const SimdLevel level : supported_levels()) {
      CAPTURE(std::string(simd_level_name(level)));
      std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
      const std::vector<float> c = gemm_bf16_out<float>(*backend, a, w, m, n, k);
      check_f32_outputs(model, c, n);
      check_within_bound(c, exact, k);
    }
  }
  SUBCASE("FP8") {
    const Fp8Data a = random_fp8(m, k, BlockLayout::tile_1x128, rng);
    const Fp8Data w = random_fp8(n, k, BlockLayout::block_128x128, rng);
    const std::vector<float> model = contract_gemm_fp8(a, w);
    const Reference exact = reference_gemm(dequantize_reference(a), dequantize_reference(w), m, n, k);
    check_within_bound(model, exact, k);
    for (const SimdLevel level : supported_levels()) {
      CAPTURE(std::string(simd_level_name(level)));
      std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
      const std::vector<float> c = gemm_fp8_f32(*backend, a, w);
      check_f32_outputs(model, c, n);
      check_within_bound(c, exact, k);
    }
  }
}

// ---- FTZ/DAZ corner cases ---------------------------------------------------------

// Every level's FP32 output equal to the portable level's, bit for bit (the
// driver makes NaNs canonical, so NaN-ness shows in the bits too).
template <class Gemm>
void check_levels_agree(Gemm gemm) {
  std::unique_ptr<Backend> portable = make_cpu_backend(2, SimdLevel::portable);
  const std::vector<float> expected = gemm(*portable);
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
    CHECK(first_bit_difference(gemm(*backend), expected) == -1);
  }
}

// One hand-made BF16 dot product: the pairs (k, a, w) that are not zero, and
// the contract's result worked out by hand.
struct Bf16Case {
  std::string what;
  std::vector<std::tuple<int64_t, float, float>> terms;
  float expected;  // NaN: any NaN
};

TEST_CASE("FTZ/DAZ corner cases of gemm_bf16 give the hand-derived results at every level") {
  // Lane j holds k = 2j (even) and 2j + 1 (odd) of every group of 32; the odd
  // pair is added first.
  const float inf = INFINITY;
  const std::vector<Bf16Case> cases = {
      {"tiny products flush one at a time (unflushed: 64 * 2^-130 = 2^-124)", {}, 0.0f},
      {"negative tiny products flush to -0 in every lane, and -0 + -0 stays -0", {}, -0.0f},
      {"a product of exactly 2^-126 stays", {{0, 0x1p-63f, 0x1p-63f}}, 0x1p-126f},
      {"a product just below 2^-126 flushes", {{0, 0x1.fcp-64f, 0x1p-63f}}, 0.0f},
      {"2^-126 - 2^-151 rounds to 2^-126 (tie to even), so it is not tiny after rounding",
       {{1, 0x1p-63f, 0x1p-63f}, {0, -0x1p-75f, 0x1p-76f}},
       0x1p-126f},
      {"2^-126 - 3 * 2^-152 rounds to 2^-126 - 2^-150 and flushes",
       {{1, 0x1p-63f, 0x1p-63f}, {0, -0x1.8p-76f, 0x1p-75f}},
       0.0f},
      {"the odd pair goes first: 2^-127 flushes before 2^-126 arrives (even first: 1.5 * 2^-126)",
       {{1, 0x1p-64f, 0x1p-63f}, {0, 0x1p-63f, 0x1p-63f}},
       0x1p-126f},
      {"a subnormal operand reads as zero (without DAZ: 1 + 2^-13)", {{0, 1.0f, 1.0f}, {1, 0x1p-133f, 0x1p120f}}, 1.0f},
      {"a negative subnormal operand times a huge value is -0, and +0 + -0 = +0", {{0, -0x1p-133f, 0x1p120f}}, 0.0f},
      {"cancellation in a lane gives +0", {{1, 1.0f, 3.0f}, {0, 1.0f, -3.0f}}, 0.0f},
      {"cancellation in the tree gives +0", {{0, 5.0f, 1.0f}, {16, -5.0f, 1.0f}}, 0.0f},
      {"infinity times zero is NaN", {{0, inf, 0.0f}}, NAN},
      {"opposite infinities in two lanes meet at the tree's last add", {{0, inf, 1.0f}, {2, -inf, 1.0f}}, NAN},
      {"two lanes of 0x1.fep127 overflow in the tree", {{0, 0x1.fep127f, 1.0f}, {16, 0x1.fep127f, 1.0f}}, inf},
      // A lane of exactly 2^-126 plus a zero product is exact: the result is
      // 2^-126 whatever the other factor (VDPBF16PS, and MXCSR FMAs, agree).
      {"2^-126 + 0 * 2^100 = 2^-126", {{1, 0x1p-63f, 0x1p-63f}, {0, 0.0f, 0x1p100f}}, 0x1p-126f},
      {"-2^-126 + subnormal * 2^120 = -2^-126 (DAZ)", {{1, -0x1p-63f, 0x1p-63f}, {0, 0x1p-133f, 0x1p120f}}, -0x1p-126f},
  };
  const int64_t count = static_cast<int64_t>(cases.size()), k = 64;
  std::vector<uint16_t> a(static_cast<size_t>(count * k), 0), w(static_cast<size_t>(count * k), 0);  // [count, k] each
  for (int64_t c = 0; c < count; ++c) {
    const Bf16Case& one = cases[static_cast<size_t>(c)];
    for (const auto& [at, av, wv] : one.terms) {
      a[static_cast<size_t>(c * k + at)] = bf16_of(av);
      w[static_cast<size_t>(c * k + at)] = bf16_of(wv);
    }
  }
  for (int64_t p = 0; p < k; ++p) {  // the first two cases fill every k
    a[static_cast<size_t>(p)] = w[static_cast<size_t>(p)] = bf16_of(0x1p-65f);
    a[static_cast<size_t>(k + p)] = bf16_of(-0x1p-65f);
    w[static_cast<size_t>(k + p)] = bf16_of(0x1p-65f);
  }
  const std::vector<float> model = contract_gemm_bf16(a, w, count, count, k);
  check_levels_agree([&](Backend& backend) { return gemm_bf16_out<float>(backend, a, w, count, count, k); });
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
    const std::vector<float> c = gemm_bf16_out<float>(*backend, a, w, count, count, k);  // [count, count]
    for (int64_t i = 0; i < count; ++i) {
      const Bf16Case& one = cases[static_cast<size_t>(i)];
      CAPTURE(one.what);
      const float got = c[static_cast<size_t>(i * count + i)];
      if (std::isnan(one.expected))
        CHECK(std::isnan(got));
      else
        CHECK(hex(bits_of(got)) == hex(bits_of(one.expected)));
    }
    // Every pairing of the cases' rows is a corner case too: the model decides.
    check_f32_outputs(model, c, count);
  }
  // The model agrees with the hand-derived results (it is the oracle elsewhere).
  for (int64_t i = 0; i < count; ++i) {
    CAPTURE(cases[static_cast<size_t>(i)].what);
    const float x = model[static_cast<size_t>(i * count + i)];
    CHECK(f32_output_bits(x) == f32_output_bits(cases[static_cast<size_t>(i)].expected));
  }
}

// One hand-made FP8 dot product over K = 256 (two blocks): codes (k, a, w)
// that are not zero, the two blocks' scales of A and W, and the result.
struct Fp8Case {
  std::string what;
  std::vector<std::tuple<int64_t, uint8_t, uint8_t>> terms;
  float a_scales[2], w_scales[2];
  float expected;  // NaN: any NaN
};

TEST_CASE("FTZ/DAZ corner cases of gemm_fp8 give the hand-derived results at every level") {
  constexpr uint8_t kOne = 0x38, kNineEighths = 0x39, kMinSubnormal = 0x01, kMinusMinSubnormal = 0x81;
  const std::vector<Fp8Case> cases = {
      {"the promotion is one FMA: F(1.125 * (1 + 2^-23) + 1) = 2.125 + 2^-22 (two roundings: 2.125)",
       {{1, kOne, kOne}, {129, kNineEighths, kOne}},
       {1.0f, 0x1.000002p0f},
       {1.0f, 1.0f},
       0x1.100002p1f},
      {"a scale product of (2^25 - 1) * 2^-151 rounds to 2^-126 (tie to even) and stays",
       {{1, kOne, kOne}},
       {18631 * 0x1p-75f, 1.0f},
       {1801 * 0x1p-76f, 1.0f},
       0x1p-126f},
      {"a scale product of (2^26 - 1) * 2^-152 rounds to 2^-126 and stays",
       {{1, kOne, kOne}},
       {8193 * 0x1p-76f, 1.0f},
       {8191 * 0x1p-76f, 1.0f},
       0x1p-126f},
      {"a scale product of (2^26 - 3) * 2^-152 rounds below 2^-126 and flushes",
       {{1, kOne, kOne}},
       {12913 * 0x1p-76f, 1.0f},
       {5197 * 0x1p-76f, 1.0f},
       0.0f},
      {"a subnormal scale reads as zero (without DAZ: 2^-20 + 2^-30)",
       {{1, kOne, kOne}, {129, kOne, kOne}},
       {0x1p100f, 1.0f},
       {0x1p-130f, 0x1p-20f},
       0x1p-20f},
      {"block sums of -2^-6 promoted to -2^-127 flush to -0 in every lane; block 1 (zero codes, scale -1) adds "
       "+0 * -1 = -0, which keeps them -0 (with a positive scale: +0), and so does the tree",
       {},
       {0x1p-61f, -1.0f},
       {0x1p-60f, 1.0f},
       -0.0f},
      {"a negative scale", {{1, kOne, kOne}}, {-0.5f, 1.0f}, {3.0f, 1.0f}, -1.5f},
      {"a -0 scale: 1 * -0 + +0 = +0", {{1, kOne, kOne}}, {-0.0f, 1.0f}, {1.0f, 1.0f}, 0.0f},
      {"tiny promoted products flush, block 0's (negative) to -0, block 1's (positive) to +0",
       {{1, kMinusMinSubnormal, kOne}, {129, kMinSubnormal, kOne}},
       {0x1p-60f, 0x1p-60f},
       {0x1p-60f, 0x1p-60f},
       0.0f},
      {"an infinite scale product makes the zero lanes NaN",
       {{1, kOne, kOne}},
       {0x1p100f, 1.0f},
       {0x1p100f, 1.0f},
       NAN},
      {"a lane of 2^-126 promoted with a zero block sum and a huge scale product stays 2^-126",
       {{1, kOne, kOne}},
       {0x1p-63f, 0x1p50f},
       {0x1p-63f, 0x1p50f},
       0x1p-126f},
  };
  const int64_t count = static_cast<int64_t>(cases.size()), k = 256;
  std::mt19937 rng(64);
  Fp8Data a = random_fp8(count, k, BlockLayout::tile_1x128, rng),
          w = random_fp8(count, k, BlockLayout::tile_1x128, rng);
  std::fill(a.codes.begin(), a.codes.end(), uint8_t{0});
  std::fill(w.codes.begin(), w.codes.end(), uint8_t{0});
  for (int64_t c = 0; c < count; ++c) {
    const Fp8Case& one = cases[static_cast<size_t>(c)];
    for (const auto& [at, ac, wc] : one.terms) {
      a.codes[static_cast<size_t>(c * k + at)] = ac;
      w.codes[static_cast<size_t>(c * k + at)] = wc;
    }
    for (int b = 0; b < 2; ++b) {
      a.scales[static_cast<size_t>(c * 2 + b)] = one.a_scales[b];
      w.scales[static_cast<size_t>(c * 2 + b)] = one.w_scales[b];
    }
  }
  // The all-lanes case: block 0 of every k is -2^-9 * 1, so each lane's block
  // sum is 8 * -2^-9 = -2^-6 (exact) and its promotion -2^-6 * 2^-121 flushes.
  for (int64_t p = 0; p < 128; ++p) {
    a.codes[static_cast<size_t>(5 * k + p)] = kMinusMinSubnormal;
    w.codes[static_cast<size_t>(5 * k + p)] = kOne;
  }
  const std::vector<float> model = contract_gemm_fp8(a, w);
  check_levels_agree([&](Backend& backend) { return gemm_fp8_f32(backend, a, w); });
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
    const std::vector<float> c = gemm_fp8_f32(*backend, a, w);  // [count, count]
    for (int64_t i = 0; i < count; ++i) {
      const Fp8Case& one = cases[static_cast<size_t>(i)];
      CAPTURE(one.what);
      const float got = c[static_cast<size_t>(i * count + i)];
      if (std::isnan(one.expected))
        CHECK(std::isnan(got));
      else
        CHECK(hex(bits_of(got)) == hex(bits_of(one.expected)));
    }
    check_f32_outputs(model, c, count);
  }
  for (int64_t i = 0; i < count; ++i) {
    CAPTURE(cases[static_cast<size_t>(i)].what);
    const float x = model[static_cast<size_t>(i * count + i)];
    CHECK(f32_output_bits(x) == f32_output_bits(cases[static_cast<size_t>(i)].expected));
  }
}

// Random operands whose products and sums straddle 2^-126: BF16 values near
// 2^-63, subnormal BF16 patterns and signed zeros; FP8 scales whose products
// lie around 2^-126, some subnormal, zero or negative.
std::vector<uint16_t> near_threshold_bf16(int64_t count, std::mt19937& rng) {
  std::vector<uint16_t> bits = bf16_in_range(count, -68, -60, rng);  // products 2^-136 .. 2^-120
  for (uint16_t& b : bits) {
    const uint32_t r = next(rng) % 20;
    if (r == 0) b = static_cast<uint16_t>((next(rng) & 0x807F) | 1u);  // a subnormal of either sign
    if (r == 1) b = static_cast<uint16_t>(next(rng) & 0x8000);         // a zero of either sign
  }
  return bits;
}

Fp8Data near_threshold_fp8(int64_t rows, int64_t cols, BlockLayout layout, std::mt19937& rng) {
  Fp8Data d = random_fp8(rows, cols, layout, rng);
  for (uint8_t& code : d.codes)
    if (next(rng) % 8 == 0) code = static_cast<uint8_t>(next(rng) & 0x80);  // more signed zeros
  std::uniform_int_distribution<int> exponent(-72, -60);                    // scale products 2^-144 .. 2^-118
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (float& s : d.scales) {
    const uint32_t r = next(rng) % 20;
    s = std::ldexp(mantissa(rng), exponent(rng)) * (r < 4 ? -1.0f : 1.0f);
    if (r == 4) s = 0x1p-127f * mantissa(rng);  // subnormal
    if (r == 5) s = (next(rng) & 1) ? -0.0f : 0.0f;
  }
  return d;
}

TEST_CASE("near-threshold random GEMMs: every level gives the contract's bits") {
  std::mt19937 rng(65);
  int64_t zero = 0, tiny = 0, outputs = 0;  // how close the data gets to the threshold
  const auto tally = [&](const std::vector<float>& model) {
    for (const float x : model) {
      zero += x == 0.0f;
      tiny += x != 0.0f && std::fabs(x) < 0x1p-120f;
    }
    outputs += static_cast<int64_t>(model.size());
  };
  for (const int64_t k : {int64_t{1}, int64_t{33}, int64_t{300}, int64_t{1100}})
    for (const Shape s : {Shape{1, 19}, Shape{7, 23}}) {
      const std::vector<uint16_t> a = near_threshold_bf16(s.m * k, rng), w = near_threshold_bf16(s.n * k, rng);
      check_levels_agree([&](Backend& backend) { return gemm_bf16_out<float>(backend, a, w, s.m, s.n, k); });
      check_bf16_gemm(a, w, s.m, s.n, k);
      tally(contract_gemm_bf16(a, w, s.m, s.n, k));
      const Fp8Data af = near_threshold_fp8(s.m, k, BlockLayout::tile_1x128, rng);
      const Fp8Data wf = near_threshold_fp8(s.n, k, BlockLayout::tile_1x128, rng);
      check_levels_agree([&](Backend& backend) { return gemm_fp8_f32(backend, af, wf); });
      check_fp8_gemm(af, wf);
      tally(contract_gemm_fp8(af, wf));
    }
  CHECK(zero * 10 > outputs);
  CHECK(tiny * 10 > outputs);
}

// ---- ftz_arithmetic.h against the hardware -----------------------------------------

#if defined(FP8RL_TEST_X86)

// Random FP32 bit patterns: any bits, denormals and tiny normals, specials,
// and ordinary values. BF16 patterns alike, with values near 2^-63 so that
// products land near 2^-126.
uint32_t random_float_bits(std::mt19937& rng) {
  static const uint32_t specials[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
                                      0x7F800001, 0x00800000, 0x80800000, 0x007FFFFF, 0x807FFFFF, 0x00000001,
                                      0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000};
  const uint32_t r = next(rng), mode = next(rng) % 8;
  if (mode <= 2) return r;
  if (mode <= 4) return (r & 0x807FFFFFu) | (next(rng) % 13) << 23;  // exponent field 0..12
  if (mode == 5) return specials[r % std::size(specials)];
  return (r & 0x807FFFFFu) | (107 + next(rng) % 41) << 23;  // 2^-20 .. 2^20
}

uint16_t random_bf16_bits(std::mt19937& rng) {
  const uint32_t r = next(rng), mode = next(rng) % 6;
  if (mode <= 1) return static_cast<uint16_t>(r);
  if (mode == 2) return static_cast<uint16_t>((r & 0x807Fu) | (next(rng) % 5) << 7);              // subnormal and tiny
  if (mode == 3) return static_cast<uint16_t>((r & 0x807Fu) | (127 - 70 + next(rng) % 15) << 7);  // 2^-70 .. 2^-56
  if (mode == 4) return static_cast<uint16_t>(random_float_bits(rng) >> 16);
  return static_cast<uint16_t>((r & 0x807Fu) | (117 + next(rng) % 21) << 7);  // 2^-10 .. 2^10
}

// A step's operands: the lane and 32-bit words of the two BF16 pairs, the
// even element in the low half (VDPBF16PS's layout).
struct Dot2Cases {
  std::vector<float> lanes;
  std::vector<uint32_t> a, w;
};

Dot2Cases random_dot2_cases(size_t count, std::mt19937& rng) {
  Dot2Cases cases{std::vector<float>(count), std::vector<uint32_t>(count), std::vector<uint32_t>(count)};
  for (size_t i = 0; i < count; ++i) {
    uint32_t lane = random_float_bits(rng);
    uint16_t a_odd = random_bf16_bits(rng), w_odd = random_bf16_bits(rng);
    uint16_t a_even = random_bf16_bits(rng), w_even = random_bf16_bits(rng);
    const uint32_t mode = next(rng) % 4;
    if (mode == 0) {  // a lane near 2^-126 and products near it
      lane = (lane & 0x807FFFFFu) | (1 + next(rng) % 12) << 23;
      a_odd = static_cast<uint16_t>((a_odd & 0x807Fu) | (127 - 66 + next(rng) % 8) << 7);
      w_odd = static_cast<uint16_t>((w_odd & 0x807Fu) | (127 - 66 + next(rng) % 8) << 7);
    }
    if (mode == 1) {  // the even product cancels most of F(lane + odd product): tiny or zero results
      const float partial = contract_fma(bf16_value(a_odd), bf16_value(w_odd), float_of(lane));
      a_even = static_cast<uint16_t>(bits_of(-partial) >> 16);
      w_even = (next(rng) & 1) ? 0x3F80 : static_cast<uint16_t>(0x3F80 | (next(rng) & 1));  // 1 or 1 + 2^-7
    }
    cases.lanes[i] = float_of(lane);
    cases.a[i] = static_cast<uint32_t>(a_odd) << 16 | a_even;
    cases.w[i] = static_cast<uint32_t>(w_odd) << 16 | w_even;
  }
  return cases;
}

bool same_result(float x, float y) { return std::isnan(x) ? std::isnan(y) : bits_of(x) == bits_of(y); }

// Counts and describes the cases where `got` differs from `expected`.
struct Mismatches {
  int64_t count = 0;
  std::ostringstream first;
  void add(const std::string& what) {
    if (count++ < 5) first << what << "\n";
  }
};

bool cpu_has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && ((eax >> 5) & 1u);  // libgcc also checks that the OS saves zmm state
}

// out[i] = VDPBF16PS(lanes[i], a[i], w[i]) for count a multiple of 16.
[[gnu::target("avx512f,avx512bf16")]] void hardware_dot2(const Dot2Cases& cases, std::vector<float>& out) {
  for (size_t i = 0; i < cases.lanes.size(); i += 16) {
    const __m512 lanes = _mm512_loadu_ps(cases.lanes.data() + i);
    const __m512i a = _mm512_loadu_si512(cases.a.data() + i), w = _mm512_loadu_si512(cases.w.data() + i);
    _mm512_storeu_ps(out.data() + i, _mm512_dpbf16_ps(lanes, (__m512bh)a, (__m512bh)w));
  }
}

TEST_CASE("fma_ftz odd then even, and the contract model, are VDPBF16PS on 2^20 random steps") {
  if (!cpu_has_avx512_bf16()) {
    MESSAGE("this CPU has no AVX512_BF16: skipped");
    return;
  }
  std::mt19937 rng(66);
  const Dot2Cases cases = random_dot2_cases(size_t{1} << 20, rng);
  std::vector<float> hardware(cases.lanes.size());
  hardware_dot2(cases, hardware);
  Mismatches emulation, model;
  int64_t flushed = 0;
  for (size_t i = 0; i < hardware.size(); ++i) {
    const float lane = cases.lanes[i];
    const float a_odd = bf16_value(static_cast<uint16_t>(cases.a[i] >> 16)),
                a_even = bf16_value(static_cast<uint16_t>(cases.a[i]));
    const float w_odd = bf16_value(static_cast<uint16_t>(cases.w[i] >> 16)),
                w_even = bf16_value(static_cast<uint16_t>(cases.w[i]));
    const float emulated = cpu::fma_ftz(a_even, w_even, cpu::fma_ftz(a_odd, w_odd, lane));
    const float modelled = contract_dot2(lane, a_odd, w_odd, a_even, w_even);
    const std::string what = "lane " + hex(bits_of(lane)) + " a " + hex(cases.a[i]) + " w " + hex(cases.w[i]) +
                             ": hardware " + hex(bits_of(hardware[i]));
    if (!same_result(hardware[i], emulated)) emulation.add(what + ", fma_ftz " + hex(bits_of(emulated)));
    if (!same_result(hardware[i], modelled)) model.add(what + ", model " + hex(bits_of(modelled)));
    flushed += hardware[i] == 0.0f;
  }
  INFO(emulation.first.str());
  CHECK(emulation.count == 0);
  INFO(model.first.str());
  CHECK(model.count == 0);
  CHECK(flushed > 10000);  // the cases reach the flushing range often
}

// The FP environment of the AVX2 / AVX-512 kernels: FTZ | DAZ, nearest even,
// exceptions masked. The arithmetic runs in functions that cannot be inlined,
// so that none of it moves across the MXCSR switch.
class FtzDazMode {
 public:
  FtzDazMode() : saved_(_mm_getcsr()) { _mm_setcsr(0x1F80u | 0x8000u | 0x0040u); }
  ~FtzDazMode() { _mm_setcsr(saved_); }
  FtzDazMode(const FtzDazMode&) = delete;
  FtzDazMode& operator=(const FtzDazMode&) = delete;

 private:
  unsigned saved_;
};

[[gnu::noinline, gnu::target("fma")]] void mxcsr_fma(const float* a, const float* b, const float* c, float* out,
                                                     size_t n) {
  for (size_t i = 0; i < n; ++i)
    _mm_store_ss(out + i, _mm_fmadd_ss(_mm_load_ss(a + i), _mm_load_ss(b + i), _mm_load_ss(c + i)));
}
[[gnu::noinline]] void mxcsr_mul(const float* a, const float* b, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) _mm_store_ss(out + i, _mm_mul_ss(_mm_load_ss(a + i), _mm_load_ss(b + i)));
}
[[gnu::noinline]] void mxcsr_add(const float* a, const float* b, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) _mm_store_ss(out + i, _mm_add_ss(_mm_load_ss(a + i), _mm_load_ss(b + i)));
}

TEST_CASE("fma_ftz, mul_ftz and add_ftz are the MXCSR FTZ|DAZ instructions on 2^20 random operands") {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("fma")) {
    MESSAGE("this CPU has no FMA: skipped");
    return;
  }
  std::mt19937 rng(67);
  const size_t n = size_t{1} << 20;
  std::vector<float> a(n), b(n), c(n), fused(n), product(n), sum(n);  // [n] each
  for (size_t i = 0; i < n; ++i) {
    a[i] = float_of(random_float_bits(rng));
    b[i] = float_of(random_float_bits(rng));
    c[i] = float_of(random_float_bits(rng));
    if (i % 4 == 0) c[i] = -cpu::fma_ftz(a[i], b[i], 0.0f) * (1.0f + 0x1p-20f);  // near-cancellation: tiny sums
    if (i % 4 == 1) {  // products near 2^-126: exponent fields adding up to 128 +- 2
      const int a_exponent = static_cast<int>((bits_of(a[i]) >> 23) & 0xFF);
      const int b_exponent = std::clamp(128 - a_exponent + static_cast<int>(next(rng) % 5) - 2, 0, 254);
      b[i] = float_of((bits_of(b[i]) & 0x807FFFFFu) | static_cast<uint32_t>(b_exponent) << 23);
    }
  }
  {
    const FtzDazMode mode;
    mxcsr_fma(a.data(), b.data(), c.data(), fused.data(), n);
    mxcsr_mul(a.data(), b.data(), product.data(), n);
    mxcsr_add(a.data(), c.data(), sum.data(), n);
  }
  Mismatches fma_errors, mul_errors, add_errors;
  for (size_t i = 0; i < n; ++i) {
    const std::string operands = hex(bits_of(a[i])) + " " + hex(bits_of(b[i])) + " " + hex(bits_of(c[i]));
    const float f = cpu::fma_ftz(a[i], b[i], c[i]), m = cpu::mul_ftz(a[i], b[i]), s = cpu::add_ftz(a[i], c[i]);
    if (!same_result(fused[i], f))
      fma_errors.add(operands + ": vfmadd " + hex(bits_of(fused[i])) + ", fma_ftz " + hex(bits_of(f)));
    if (!same_result(product[i], m))
      mul_errors.add(operands + ": vmulss " + hex(bits_of(product[i])) + ", mul_ftz " + hex(bits_of(m)));
    if (!same_result(sum[i], s))
      add_errors.add(operands + ": vaddss " + hex(bits_of(sum[i])) + ", add_ftz " + hex(bits_of(s)));
    // The model's F() is the same arithmetic.
    if (!same_result(fused[i], contract_fma(a[i], b[i], c[i]))) fma_errors.add(operands + ": contract_fma differs");
    if (!same_result(product[i], contract_mul(a[i], b[i]))) mul_errors.add(operands + ": contract_mul differs");
    if (!same_result(sum[i], contract_add(a[i], c[i]))) add_errors.add(operands + ": contract_add differs");
  }
  INFO(fma_errors.first.str());
  CHECK(fma_errors.count == 0);
  INFO(mul_errors.first.str());
  CHECK(mul_errors.count == 0);
  INFO(add_errors.first.str());
  CHECK(add_errors.count == 0);
}

#endif  // FP8RL_TEST_X86

}  // namespace
}  // namespace fp8rl::test
