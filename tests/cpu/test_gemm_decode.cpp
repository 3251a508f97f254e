// The per-ISA decoders that feed the GEMM kernels: every E4M3 code and every
// BF16 pattern must decode to exactly what the shared scalar codecs give.
#include <doctest/doctest.h>

#include <string>

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

}  // namespace
}  // namespace fp8rl::test
