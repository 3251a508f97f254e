// The per-ISA decoders that feed the GEMM kernels: every E4M3 code and every
// BF16 pattern must decode to exactly what the shared scalar codecs give, also
// inside the single-row kernels that decode W themselves.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "cpu/gemm_test_support.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/common/block_scale.h"
#include "kernels/cpu/gemm_kernels.h"

namespace fp8rl::test {
namespace {

TEST_CASE("GEMM decoders reproduce dequantize_value for all 256 codes") {
  // Two rows of 300 columns: all codes at several offsets (full 16-chunks and
  // a partial tail), three scales per row including a subnormal product range.
  const int64_t rows = 2, cols = 300, ld = 304;
  std::vector<uint8_t> codes(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>((i * 37 + i / 256) & 0xFF);
  const std::vector<float> scales{0.37f, 3.0e-39f, 1.0e30f, 1.0f, 2.5e-3f, 7.0f};  // [2, 3]
  const Fp8Matrix matrix{codes.data(), scales.data(), rows, cols, BlockLayout::tile_1x128, Fp8Format::e4m3};
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::vector<float> out(static_cast<size_t>(rows * ld), -1.0f);
    cpu::gemm_kernels(level).decode_fp8_rows(matrix, 0, rows, out.data(), ld);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        CAPTURE(r);
        CAPTURE(c);
        const float expected = dequantize_value(codes[static_cast<size_t>(r * cols + c)],
                                                scales[static_cast<size_t>(r * 3 + c / 128)], Fp8Format::e4m3);
        REQUIRE(bits_of(out[static_cast<size_t>(r * ld + c)]) == bits_of(expected));
      }
      for (int64_t c = cols; c < ld; ++c) REQUIRE(bits_of(out[static_cast<size_t>(r * ld + c)]) == 0u);
    }
  }
}

TEST_CASE("GEMM decoders reproduce bf16_decode for all 65536 patterns") {
  const int64_t cols = 65536 / 4, rows = 4;
  std::vector<uint16_t> bits(65536);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::vector<float> out(bits.size());
    cpu::gemm_kernels(level).decode_bf16_rows(bits.data(), cols, 0, rows, out.data(), cols);
    for (size_t i = 0; i < bits.size(); ++i) REQUIRE(bits_of(out[i]) == bits_of(bf16_decode(bits[i])));
  }
}

// One row of A against n rows of W, both ways the driver can compute it:
// decode_rows(panel) fills a panel [n, kp] for multiply_block, and
// multiply_row(c) decodes W inside the kernel. Both must give the same bits.
template <class DecodeRows, class MultiplyRow>
void check_single_row_kernel(const cpu::GemmKernels& kernels, const std::vector<float>& a, int64_t n, int64_t kp,
                             DecodeRows decode_rows, MultiplyRow multiply_row) {
  const int64_t multiple = kernels.panel_rows_multiple;
  std::vector<float> panel(static_cast<size_t>((n + multiple - 1) / multiple * multiple * kp), 0.0f);
  std::vector<float> lanes(static_cast<size_t>(kernels.lane_scratch_floats(n)));
  std::vector<float> expected(static_cast<size_t>(n)), c(static_cast<size_t>(n));
  decode_rows(panel.data());
  kernels.multiply_block(a.data(), 1, panel.data(), n, kp, expected.data(), n, lanes.data());
  multiply_row(c.data());
  for (size_t j = 0; j < c.size(); ++j) {
    CAPTURE(j);
    // Raw kernel NaNs may differ in sign and payload with the compiler's operand
    // order; the driver canonicalizes them, so here only NaN-ness must match.
    if (std::isnan(expected[j]))
      REQUIRE(std::isnan(c[j]));
    else
      REQUIRE(bits_of(c[j]) == bits_of(expected[j]));
  }
}

TEST_CASE("single-row kernels that decode W themselves give the bits of a decoded panel") {
  // All 256 codes (NaN included) and extreme scales; K below one chunk, with
  // a partial last chunk, and past one depth chunk; row ranges that end inside
  // a tile and do not start at zero.
  std::mt19937 rng(44);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  const float scale_values[] = {0.37f, 3.0e-39f, 1.0e30f, 1.0f, 2.5e-3f, 7.0f};
  for (const int64_t cols : {int64_t{13}, int64_t{300}, int64_t{1100}}) {
    CAPTURE(cols);
    const int64_t rows = 37, kp = (cols + 15) / 16 * 16, blocks = (cols + 127) / 128;
    std::vector<uint8_t> codes(static_cast<size_t>(rows * cols));
    std::vector<uint16_t> bf16 = random_bf16(rows * cols, rng);
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>((i * 37 + i / 256) & 0xFF);
    bf16[5] = 0x7FC1;  // NaN with a payload
    std::vector<float> scales(static_cast<size_t>(rows * blocks)), a(static_cast<size_t>(kp), 0.0f);
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = scale_values[i % 6];
    for (int64_t k = 0; k < cols; ++k) a[static_cast<size_t>(k)] = uniform(rng);
    const Fp8Matrix w{codes.data(), scales.data(), rows, cols, BlockLayout::tile_1x128, Fp8Format::e4m3};
    for (const SimdLevel level : supported_levels()) {
      CAPTURE(std::string(simd_level_name(level)));
      const cpu::GemmKernels& kernels = cpu::gemm_kernels(level);
      for (const std::pair<int64_t, int64_t>& range : {std::pair<int64_t, int64_t>{0, rows}, {5, 30}}) {
        const int64_t begin = range.first, end = range.second;
        CAPTURE(begin);
        check_single_row_kernel(
            kernels, a, end - begin, kp, [&](float* panel) { kernels.decode_fp8_rows(w, begin, end, panel, kp); },
            [&](float* c) { kernels.multiply_row_fp8(a.data(), w, begin, end, kp, c); });
        check_single_row_kernel(
            kernels, a, end - begin, kp,
            [&](float* panel) { kernels.decode_bf16_rows(bf16.data(), cols, begin, end, panel, kp); },
            [&](float* c) { kernels.multiply_row_bf16(a.data(), bf16.data(), cols, begin, end, kp, c); });
      }
    }
  }
}

TEST_CASE("single-row FP8 kernels reproduce dequantize_value for every code and scale range") {
  // The single-row kernels fold the FP16 offset 256 into the scale where that
  // is exact: all 256 codes times scales on both sides of every boundary of
  // that rule (subnormal, zero, 2^119, overflow, non-finite) and random ones.
  // W row r holds code r in column 3 (+0 elsewhere) and A picks column 3, so
  // c[r] is the dequantized code itself (a -0 becomes +0 in the lane sum;
  // with an infinite scale the +0 codes make the whole row NaN).
  std::vector<float> scale_values{1.0f,    0.37f,    0x1p-126f, 0x1.8p-126f, 3.0e-39f, 1.0e-45f, 0.0f,
                                  -0.0f,   -0.5f,    0x1p119f,  0x1.8p119f,  0x1p120f, 1.0e30f,  FLT_MAX / 448,
                                  FLT_MAX, INFINITY, -INFINITY, NAN,         2.5e-3f,  -7.0f,    0x1.fffffep-127f};
  std::mt19937 rng(45);
  std::uniform_real_distribution<float> exponent(-150.0f, 128.0f), mantissa(1.0f, 2.0f);
  for (int i = 0; i < 200; ++i) scale_values.push_back(std::ldexp(mantissa(rng), static_cast<int>(exponent(rng))));
  const int64_t rows = 256, cols = 16, kp = 16;
  std::vector<uint8_t> codes(static_cast<size_t>(rows * cols), 0);
  for (int64_t r = 0; r < rows; ++r) codes[static_cast<size_t>(r * cols + 3)] = static_cast<uint8_t>(r);
  std::vector<float> a(static_cast<size_t>(kp), 0.0f), c(static_cast<size_t>(rows));
  a[3] = 1.0f;
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    const cpu::GemmKernels& kernels = cpu::gemm_kernels(level);
    for (const float scale : scale_values) {
      CAPTURE(scale);
      const std::vector<float> scales(static_cast<size_t>(rows), scale);
      const Fp8Matrix w{codes.data(), scales.data(), rows, cols, BlockLayout::tile_1x128, Fp8Format::e4m3};
      kernels.multiply_row_fp8(a.data(), w, 0, rows, kp, c.data());
      for (int64_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        const float expected = dequantize_value(static_cast<uint8_t>(r), scale, Fp8Format::e4m3) + 0.0f;
        if (std::isnan(expected) || !std::isfinite(scale))  // a non-finite scale times the +0 codes is NaN
          REQUIRE(std::isnan(c[static_cast<size_t>(r)]));
        else
          REQUIRE(bits_of(c[static_cast<size_t>(r)]) == bits_of(expected));
      }
    }
  }
}

}  // namespace
}  // namespace fp8rl::test
