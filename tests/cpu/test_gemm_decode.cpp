// The per-level pieces of the GEMM kernel tables that the driver tests cannot
// single out: attention's decoders, the single-row kernels that widen W in
// registers instead of packing it, and the widening of every E4M3 code and
// BF16 pattern into the packed element format.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>

#include "cpu/gemm_test_support.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/common/fp8_codec.h"
#include "kernels/cpu/gemm_kernels.h"

namespace fp8rl::test {
namespace {

using cpu::GemmKernels;
using cpu::PackedScales;

constexpr int64_t kGroup = 32;  // K is zero-padded to a multiple of this (kGemmGroup)

int64_t padded_k(int64_t k) { return (k + kGroup - 1) / kGroup * kGroup; }

// Packed rows in a table's own element format: [rows, kp] elements of
// kernels.packed_bytes bytes each (2: BF16 bits, 4: FP32), zeroed. Held as
// floats so that every format is aligned.
std::vector<float> packed_storage(const GemmKernels& kernels, int64_t rows, int64_t kp) {
  return std::vector<float>(static_cast<size_t>((rows * kp * kernels.packed_bytes + 3) / 4), 0.0f);
}

int64_t padded_panel_rows(const GemmKernels& kernels, int64_t n) {
  return (n + kernels.panel_rows_multiple - 1) / kernels.panel_rows_multiple * kernels.panel_rows_multiple;
}

// multiply_block's lane scratch, which it needs only past one depth chunk.
std::vector<float> lane_scratch(const GemmKernels& kernels, int64_t n, int64_t kp) {
  return std::vector<float>(kp > cpu::kGemmDepthChunk ? static_cast<size_t>(kernels.lane_scratch_floats(n)) : 0);
}

// Same bits, or both NaN: raw kernel NaNs may differ in sign and payload with
// the order of the operands (the driver canonicalizes them).
void require_same_results(const std::vector<float>& expected, const std::vector<float>& actual) {
  REQUIRE(expected.size() == actual.size());
  for (size_t j = 0; j < actual.size(); ++j) {
    CAPTURE(j);
    CAPTURE(expected[j]);
    CAPTURE(actual[j]);
    if (std::isnan(expected[j]))
      REQUIRE(std::isnan(actual[j]));
    else
      REQUIRE(bits_of(actual[j]) == bits_of(expected[j]));
  }
}

// ---- (a) attention's decoders ---------------------------------------------

TEST_CASE("decode_e4m3 gives fp8_decode's bits for all 256 codes at every level") {
  std::vector<uint8_t> codes(256);  // [256]: every code
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i);
  constexpr float kSentinel = -12345.0f;
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    const GemmKernels& kernels = cpu::gemm_kernels(level);
    // Starts and lengths that are not multiples of any vector width, written
    // one float past an aligned address; the floats around must stay.
    for (const int64_t start : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{100}, int64_t{256}}) {
      CAPTURE(start);
      const int64_t n = 256 - start;
      std::vector<float> out(static_cast<size_t>(n + 2), kSentinel);  // [sentinel, n values, sentinel]
      kernels.decode_e4m3(codes.data() + start, n, out.data() + 1);
      for (int64_t i = 0; i < n; ++i) {
        CAPTURE(i);
        const uint8_t code = codes[static_cast<size_t>(start + i)];
        REQUIRE(bits_of(out[static_cast<size_t>(i + 1)]) == bits_of(fp8_decode(code, Fp8Format::e4m3)));
      }
      REQUIRE(bits_of(out.front()) == bits_of(kSentinel));
      REQUIRE(bits_of(out.back()) == bits_of(kSentinel));
    }
  }
}

TEST_CASE("decode_bf16 gives bf16_decode's bits for all 65536 patterns at every level") {
  std::vector<uint16_t> patterns(65536);  // [65536]: every pattern, subnormals and NaN payloads included
  for (size_t i = 0; i < patterns.size(); ++i) patterns[i] = static_cast<uint16_t>(i);
  constexpr float kSentinel = -12345.0f;
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    const GemmKernels& kernels = cpu::gemm_kernels(level);
    for (const auto& range : {std::pair<int64_t, int64_t>{0, 65536}, {3, 1003}, {65535, 1}}) {
      const int64_t start = range.first, n = range.second;
      CAPTURE(start);
      std::vector<float> out(static_cast<size_t>(n + 2), kSentinel);  // [sentinel, n values, sentinel]
      kernels.decode_bf16(patterns.data() + start, n, out.data() + 1);
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t pattern = patterns[static_cast<size_t>(start + i)];
        CAPTURE(pattern);
        REQUIRE(bits_of(out[static_cast<size_t>(i + 1)]) == bits_of(bf16_decode(pattern)));
      }
      REQUIRE(bits_of(out.front()) == bits_of(kSentinel));
      REQUIRE(bits_of(out.back()) == bits_of(kSentinel));
    }
  }
}

// ---- (b) single-row kernels against the packed panel path --------------------

// c [end - begin] = packed a . W[begin, end)^T the way the driver does it for
// several rows of A: W packed into a zero-padded panel, scales beside it
// [padded rows, blocks] (zero past the real rows), then multiply_block, m = 1.
std::vector<float> fp8_by_panel(const GemmKernels& kernels, const void* a, PackedScales a_scales, const Fp8Data& w,
                                int64_t begin, int64_t end, int64_t kp) {
  const int64_t n = end - begin, padded = padded_panel_rows(kernels, n), blocks = w.blocks_per_row();
  std::vector<float> panel = packed_storage(kernels, padded, kp);
  kernels.pack_fp8_rows(w.view(), begin, end, panel.data(), kp);
  std::vector<float> scales(static_cast<size_t>(padded * blocks), 0.0f);  // [padded, blocks]
  for (int64_t r = begin; r < end; ++r)
    for (int64_t b = 0; b < blocks; ++b) scales[static_cast<size_t>((r - begin) * blocks + b)] = w.scale_at(r, b * 128);
  std::vector<float> lanes = lane_scratch(kernels, n, kp), c(static_cast<size_t>(n));
  kernels.multiply_block(a, 1, a_scales, panel.data(), n, PackedScales{scales.data(), blocks}, kp, c.data(), n,
                         lanes.empty() ? nullptr : lanes.data());
  return c;
}

std::vector<float> bf16_by_panel(const GemmKernels& kernels, const void* a, const std::vector<uint16_t>& w,
                                 int64_t cols, int64_t begin, int64_t end, int64_t kp) {
  const int64_t n = end - begin;
  std::vector<float> panel = packed_storage(kernels, padded_panel_rows(kernels, n), kp);
  kernels.pack_bf16_rows(w.data(), cols, begin, end, panel.data(), kp);
  std::vector<float> lanes = lane_scratch(kernels, n, kp), c(static_cast<size_t>(n));
  kernels.multiply_block(a, 1, PackedScales{}, panel.data(), n, PackedScales{}, kp, c.data(), n,
                         lanes.empty() ? nullptr : lanes.data());
  return c;
}

// W for the single-row tests: every one of the 256 codes at many positions;
// NaN codes only in rows 7 and 133 (each makes its whole output NaN, so
// elsewhere they would hide every other result).
Fp8Data all_codes_matrix(int64_t rows, int64_t cols, BlockLayout layout) {
  std::mt19937 rng(46);
  Fp8Data w = random_fp8(rows, cols, layout, rng);
  for (size_t i = 0; i < w.codes.size(); ++i) {
    auto code = static_cast<uint8_t>((i * 37 + i / 256) & 0xFF);
    const int64_t row = static_cast<int64_t>(i) / cols;
    if ((code & 0x7F) == 0x7F && row != 7 && row != 133) code ^= 1;
    w.codes[i] = code;
  }
  w.codes[static_cast<size_t>(7 * cols + cols / 2)] = 0x7F;  // both NaN codes, whatever the stride put there
  w.codes[static_cast<size_t>(133 * cols + cols - 1)] = 0xFF;
  // One block in every third scale row takes an extreme scale, every other
  // block a benign one, so that each extreme meets many codes and most
  // outputs stay finite (with 128x128 blocks: scale row 1, rows 128 on).
  const float extremes[] = {0x1p-130f, 3.0e-39f,  0.0f, -0.0f,     1.0e30f, FLT_MAX,
                            INFINITY,  -INFINITY, NAN,  0x1p-126f, -2.5f,   0x1p-100f};
  const float benign[] = {0.37f, 1.0f, 2.5e-3f, 7.0f, -0.75f};
  const int64_t blocks = w.blocks_per_row();
  for (size_t i = 0; i < w.scales.size(); ++i) {
    const int64_t r = static_cast<int64_t>(i) / blocks, b = static_cast<int64_t>(i) % blocks;
    const bool extreme = r % 3 == 1 && b == (r / 3) % blocks;
    w.scales[i] = extreme ? extremes[static_cast<size_t>(r / 3) % std::size(extremes)] : benign[i % std::size(benign)];
  }
  return w;
}

TEST_CASE("multiply_row_fp8 gives the bits of pack_fp8_rows + multiply_block with m = 1") {
  // K below one group, with partial 128 blocks, and past one depth chunk
  // (1024); W in both layouts (128x128 blocks: rows past 128 take the second
  // scale row); row ranges that do not start at zero and end inside a tile.
  const int64_t rows = 150;
  const std::pair<int64_t, int64_t> ranges[] = {{0, rows}, {5, 30}, {121, 141}, {149, 150}};
  const float a_scale_values[] = {0.37f, 1.0f, 0x1p-100f, 3.0e-39f, 1.0e20f, 7.0f, 0.0f, -1.5f, 2.5e-3f};
  for (const BlockLayout layout : {BlockLayout::tile_1x128, BlockLayout::block_128x128}) {
    for (const int64_t cols : {int64_t{13}, int64_t{300}, int64_t{1100}}) {
      CAPTURE(static_cast<int>(layout));
      CAPTURE(cols);
      const int64_t kp = padded_k(cols);
      const Fp8Data w = all_codes_matrix(rows, cols, layout);
      std::mt19937 rng(47);
      Fp8Data a = random_fp8(1, cols, BlockLayout::tile_1x128, rng);  // finite codes
      for (size_t b = 0; b < a.scales.size(); ++b) a.scales[b] = a_scale_values[b];
      const PackedScales a_scales{a.scales.data(), a.blocks_per_row()};
      for (const SimdLevel level : supported_levels()) {
        CAPTURE(std::string(simd_level_name(level)));
        const GemmKernels& kernels = cpu::gemm_kernels(level);
        std::vector<float> a_packed = packed_storage(kernels, 1, kp);  // [1, kp] in the level's format
        kernels.pack_fp8_rows(a.view(), 0, 1, a_packed.data(), kp);
        int64_t finite = 0, total = 0;
        for (const auto& [begin, end] : ranges) {
          CAPTURE(begin);
          CAPTURE(end);
          const std::vector<float> expected = fp8_by_panel(kernels, a_packed.data(), a_scales, w, begin, end, kp);
          std::vector<float> c(static_cast<size_t>(end - begin));
          kernels.multiply_row_fp8(a_packed.data(), a_scales, w.view(), begin, end, kp, c.data());
          require_same_results(expected, c);
          for (const float x : c) finite += std::isfinite(x) && x != 0.0f;
          total += end - begin;
        }
        CHECK(2 * finite > total);  // the extremes leave enough ordinary outputs to compare
      }
    }
  }
}

TEST_CASE("multiply_row_bf16 gives the bits of pack_bf16_rows + multiply_block with m = 1") {
  const int64_t rows = 37;
  const std::pair<int64_t, int64_t> ranges[] = {{0, rows}, {5, 30}, {36, 37}};
  for (const int64_t cols : {int64_t{13}, int64_t{300}, int64_t{1100}}) {
    CAPTURE(cols);
    const int64_t kp = padded_k(cols);
    std::mt19937 rng(48);
    std::vector<uint16_t> w = random_bf16(rows * cols, rng), a = random_bf16(cols, rng);  // w [rows, cols], a [cols]
    // Subnormals (read as zero of their sign), signed zeros and huge values
    // throughout; NaN and infinity each in one row only.
    const uint16_t specials[] = {0x0001, 0x8001, 0x007F, 0x8040, 0x8000, 0x0000, 0x7F7F, 0xFF00};
    for (size_t i = 0; i < w.size(); i += 29) w[i] = specials[(i / 29) % std::size(specials)];
    for (size_t i = 3; i < a.size(); i += 31) a[i] = specials[(i / 31) % std::size(specials)];
    w[static_cast<size_t>(9 * cols + cols / 2)] = 0x7FC1;   // W[9, :] has a NaN with a payload
    w[static_cast<size_t>(17 * cols + cols - 1)] = 0xFF80;  // W[17, :] has -inf in the last column
    for (const SimdLevel level : supported_levels()) {
      CAPTURE(std::string(simd_level_name(level)));
      const GemmKernels& kernels = cpu::gemm_kernels(level);
      std::vector<float> a_packed = packed_storage(kernels, 1, kp);  // [1, kp] in the level's format
      kernels.pack_bf16_rows(a.data(), cols, 0, 1, a_packed.data(), kp);
      for (const auto& [begin, end] : ranges) {
        CAPTURE(begin);
        CAPTURE(end);
        const std::vector<float> expected = bf16_by_panel(kernels, a_packed.data(), w, cols, begin, end, kp);
        std::vector<float> c(static_cast<size_t>(end - begin));
        kernels.multiply_row_bf16(a_packed.data(), w.data(), cols, begin, end, kp, c.data());
        require_same_results(expected, c);
      }
    }
  }
}

// ---- (c) every code through a unit pick -------------------------------------

// The contract's result for A = e_3 (scale 1) against a W row holding `code`
// at column 3 with scale s, from the code's bit fields: lane 1 (the pair
// k = 2, 3) is p = F(0 + 1 * code) = code exactly, promoted to
// F(p * F(1 * s) + 0); every other lane is F(+0 * s + 0) = +0, so the tree
// adds +0 to it (which turns a flushed -0 into +0). A non-finite s makes the
// other lanes 0 * s = NaN.
float unit_pick_expected(uint8_t code, float s) {
  const double value = e4m3_value(code);
  if (std::isnan(value) || !std::isfinite(s)) return NAN;
  const double s_b = daz(s);                  // F(1 * s): exact but for DAZ
  return contract_round(value * s_b) + 0.0f;  // the product is exact (4 x 24 bits)
}

TEST_CASE("every E4M3 code times a unit pick is the code's value times the scale under the contract") {
  // Scales on both sides of every boundary: subnormal (read as zero), zero,
  // products just below and at 2^-126 for the smallest code (2^-9), overflow
  // past FLT_MAX, non-finite; and random ones across the whole range.
  std::vector<float> scale_values;
  const auto add = [&](std::initializer_list<float> values) { scale_values.insert(scale_values.end(), values); };
  add({1.0f, 0.37f, 2.5e-3f, -0.5f, -7.0f});                                         // ordinary
  add({0x1p-126f, 0x1.8p-126f, 0x1.fffffep-127f, 3.0e-39f, 1.0e-45f, 0.0f, -0.0f});  // near the smallest normal
  add({0x1p-117f, -0x1p-117f, 0x1.fffffep-118f, 0x1.555556p-118f, 0x1.2492p-117f});  // 2^-9 x scale near 2^-126
  add({0x1p119f, 0x1.8p119f, 0x1p120f, 1.0e30f, FLT_MAX / 448, FLT_MAX, INFINITY, -INFINITY, NAN});  // overflow
  std::mt19937 rng(45);
  std::uniform_int_distribution<int> exponent(-150, 127);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (int i = 0; i < 200; ++i) scale_values.push_back(std::ldexp(mantissa(rng), exponent(rng)));

  const int64_t rows = 256, cols = 32, kp = 32;
  Fp8Data w = random_fp8(rows, cols, BlockLayout::tile_1x128, rng);  // W [256, 32]: row r = code r at column 3
  std::fill(w.codes.begin(), w.codes.end(), uint8_t{0});
  for (int64_t r = 0; r < rows; ++r) w.codes[static_cast<size_t>(r * cols + 3)] = static_cast<uint8_t>(r);
  Fp8Data a_fp8 = random_fp8(1, cols, BlockLayout::tile_1x128, rng);  // A = e_3 as E4M3 (1.0 = 0x38), scale 1
  std::fill(a_fp8.codes.begin(), a_fp8.codes.end(), uint8_t{0});
  a_fp8.codes[3] = 0x38;
  a_fp8.scales[0] = 1.0f;
  std::vector<uint16_t> a_bf16(static_cast<size_t>(cols), 0);  // A = e_3 as BF16 (1.0 = 0x3F80)
  a_bf16[3] = 0x3F80;
  const PackedScales a_scales{a_fp8.scales.data(), 1};

  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    const GemmKernels& kernels = cpu::gemm_kernels(level);
    std::vector<float> a_from_fp8 = packed_storage(kernels, 1, kp), a_from_bf16 = packed_storage(kernels, 1, kp);
    kernels.pack_fp8_rows(a_fp8.view(), 0, 1, a_from_fp8.data(), kp);
    kernels.pack_bf16_rows(a_bf16.data(), cols, 0, 1, a_from_bf16.data(), kp);
    for (const float scale : scale_values) {
      CAPTURE(scale);
      std::fill(w.scales.begin(), w.scales.end(), scale);
      std::vector<float> expected(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r)
        expected[static_cast<size_t>(r)] = unit_pick_expected(static_cast<uint8_t>(r), scale);
      for (const auto* a : {&a_from_fp8, &a_from_bf16}) {
        CAPTURE(a == &a_from_fp8 ? "A packed from E4M3" : "A packed from BF16");
        std::vector<float> c(static_cast<size_t>(rows));
        kernels.multiply_row_fp8(a->data(), a_scales, w.view(), 0, rows, kp, c.data());  // W widened in registers
        require_same_results(expected, c);
        require_same_results(expected, fp8_by_panel(kernels, a->data(), a_scales, w, 0, rows, kp));  // W packed
      }
    }
  }
}

TEST_CASE("every BF16 pattern times a unit pick is its value, subnormals read as zero") {
  // W row r = pattern r at column 3; A = e_3. Lane 1 is F(0 + 1 * w) =
  // DAZ(w) and the tree adds +0 lanes to it, so c[r] = DAZ(w) + 0, or NaN.
  const int64_t rows = 65536, cols = 32, kp = 32;
  std::vector<uint16_t> w(static_cast<size_t>(rows * cols), 0);  // [65536, 32]
  for (int64_t r = 0; r < rows; ++r) w[static_cast<size_t>(r * cols + 3)] = static_cast<uint16_t>(r);
  std::vector<uint16_t> a(static_cast<size_t>(cols), 0);  // [32]: 1.0 at column 3
  a[3] = 0x3F80;
  std::vector<float> expected(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float value = bf16_value(static_cast<uint16_t>(r));
    expected[static_cast<size_t>(r)] = std::isnan(value) ? NAN : static_cast<float>(daz(value)) + 0.0f;
  }
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    const GemmKernels& kernels = cpu::gemm_kernels(level);
    std::vector<float> a_packed = packed_storage(kernels, 1, kp);
    kernels.pack_bf16_rows(a.data(), cols, 0, 1, a_packed.data(), kp);
    std::vector<float> c(static_cast<size_t>(rows));
    kernels.multiply_row_bf16(a_packed.data(), w.data(), cols, 0, rows, kp, c.data());
    require_same_results(expected, c);
    require_same_results(expected, bf16_by_panel(kernels, a_packed.data(), w, cols, 0, rows, kp));
  }
}

}  // namespace
}  // namespace fp8rl::test
