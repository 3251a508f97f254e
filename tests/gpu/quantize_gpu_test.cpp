// GPU quantization and dequantization against the CPU backend, bit for bit:
// both call kernels/common's amax_update, block_scale and quantize_value, and
// an amax is a max, so the order of the GPU's reductions cannot matter.
#include <cfloat>
#include <cmath>
#include <string>

#include "gpu/gpu_test_support.h"

namespace fp8rl::test {
namespace {

struct Quantized {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
};

Quantized quantize_on(Backend& backend, const std::vector<float>& values, DType dtype, int64_t rows, int64_t cols,
                      const QuantSpec& spec) {
  const Buffer input = dtype == DType::bf16 ? to_backend(backend, to_bf16(values)) : to_backend(backend, values);
  const auto code_count = static_cast<size_t>(rows * cols);
  const auto scale_count = static_cast<size_t>(scale_shape(spec.layout, rows, cols).count());
  const Buffer codes(backend, code_count), scales(backend, scale_count * sizeof(float));
  backend.quantize(input.as<void>(), dtype, rows, cols, spec, codes.as<uint8_t>(), scales.as<float>());
  return {from_backend<uint8_t>(backend, codes, code_count), from_backend<float>(backend, scales, scale_count)};
}

std::string describe(const QuantSpec& spec, DType dtype, int64_t rows, int64_t cols) {
  static const char* const kLayouts[] = {"tile_1x128", "tile_1x128_transposed", "block_128x128"};
  return std::string(kLayouts[static_cast<int>(spec.layout)]) + (dtype == DType::bf16 ? " bf16" : " f32") +
         (spec.format == Fp8Format::e4m3 ? " e4m3" : " e5m2") +
         (spec.scale_format == ScaleFormat::pow2 ? " pow2" : " fp32-scale") +
         (spec.saturate ? " saturating" : " non-saturating") + " [" + std::to_string(rows) + ", " +
         std::to_string(cols) + "]";
}

void check_same_quantization(const std::vector<float>& values, DType dtype, int64_t rows, int64_t cols,
                             const QuantSpec& spec) {
  const Quantized expected = quantize_on(cpu(), values, dtype, rows, cols, spec);
  const Quantized actual = quantize_on(gpu(), values, dtype, rows, cols, spec);
  const int64_t code_diff = first_difference(expected.codes, actual.codes);
  const int64_t scale_diff = first_difference(expected.scales, actual.scales);
  CHECK_MESSAGE(code_diff == -1, describe(spec, dtype, rows, cols), ": first different code at ", code_diff);
  CHECK_MESSAGE(scale_diff == -1, describe(spec, dtype, rows, cols), ": first different scale at ", scale_diff);
}

// Every combination of layout, input type, scale format, FP8 format and saturation.
template <typename F>
void for_each_spec(F&& f) {
  for (const BlockLayout layout :
       {BlockLayout::tile_1x128, BlockLayout::tile_1x128_transposed, BlockLayout::block_128x128})
    for (const DType dtype : {DType::f32, DType::bf16})
      for (const ScaleFormat scale_format : {ScaleFormat::fp32, ScaleFormat::pow2})
        for (const Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2})
          for (const bool saturate : {true, false}) f(QuantSpec{format, layout, scale_format, saturate}, dtype);
}

// [260, 200]: partial blocks on both axes, and blocks that are all zero, hold
// NaN or +-Inf, hold only fp32 subnormals, hold values near FLT_MAX, or hold
// nothing finite at all.
std::vector<float> special_matrix(int64_t rows, int64_t cols) {
  std::vector<float> v = random_matrix(rows, cols, 7, 6);
  auto at = [&](int64_t r, int64_t c) -> float& { return v[static_cast<size_t>(r * cols + c)]; };
  for (int64_t r = 0; r < 128; ++r)
    for (int64_t c = 0; c < 128; ++c) at(r, c) = (r + c) % 3 == 0 ? -0.0f : 0.0f;
  for (int64_t r = 128; r < 256; ++r)
    for (int64_t c = 128; c < cols; ++c) at(r, c) *= 1e-40f;
  at(130, 5) = NAN;
  at(140, 7) = INFINITY;
  at(141, 150) = -INFINITY;
  for (int64_t c = 0; c < cols; ++c) at(257, c) = c % 2 ? NAN : -INFINITY;
  for (int64_t c = 0; c < 50; ++c) at(258, c) = (c % 2 ? -3.0e38f : 3.0e38f);
  at(258, 60) = FLT_MAX;
  for (int64_t r = 256; r < rows; ++r)
    for (int64_t c = 190; c < cols; ++c) at(r, c) = r % 2 ? INFINITY : NAN;
  return v;
}

TEST_CASE("cuda quantize: bit-identical to the CPU backend on random inputs with partial blocks") {
  struct Shape {
    int64_t rows, cols;
  };
  const Shape shapes[] = {{1, 1}, {1, 129}, {129, 1}, {300, 259}, {256, 384}, {130, 33}};
  uint32_t seed = 1;
  for (const Shape& shape : shapes) {
    const std::vector<float> values = random_matrix(shape.rows, shape.cols, seed++, 12);
    for_each_spec([&](const QuantSpec& spec, DType dtype) {
      check_same_quantization(values, dtype, shape.rows, shape.cols, spec);
    });
  }
}

TEST_CASE("cuda quantize: bit-identical on zero, NaN, Inf, subnormal and huge blocks") {
  const int64_t rows = 260, cols = 200;
  const std::vector<float> values = special_matrix(rows, cols);
  for_each_spec([&](const QuantSpec& spec, DType dtype) { check_same_quantization(values, dtype, rows, cols, spec); });
}

TEST_CASE("cuda quantize: empty matrices are refused, as on the CPU") {
  for (Backend* backend : {&cpu(), &gpu()}) {
    const Buffer input(*backend, 16), codes(*backend, 16), scales(*backend, 16);
    for (const int64_t rows : {0, 5}) {
      const int64_t cols = 5 - rows;
      CHECK(thrown_status([&] {
              backend->quantize(input.as<void>(), DType::f32, rows, cols, QuantSpec{}, codes.as<uint8_t>(),
                                scales.as<float>());
            }) == Status::invalid_argument);
    }
  }
}

// Dequantizes the CPU's codes and scales on both backends.
TEST_CASE("cuda dequantize: bit-identical to the CPU backend (NaN payloads aside)") {
  const int64_t rows = 260, cols = 200;
  const std::vector<float> values = special_matrix(rows, cols);
  for (const BlockLayout layout :
       {BlockLayout::tile_1x128, BlockLayout::tile_1x128_transposed, BlockLayout::block_128x128})
    for (const Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2}) {
      const QuantSpec spec{format, layout, ScaleFormat::fp32, false};
      const Quantized q = quantize_on(cpu(), values, DType::f32, rows, cols, spec);
      std::vector<float> results[2];
      Backend* backends[2] = {&cpu(), &gpu()};
      for (int b = 0; b < 2; ++b) {
        const Buffer codes = to_backend(*backends[b], q.codes), scales = to_backend(*backends[b], q.scales);
        const Buffer output(*backends[b], values.size() * sizeof(float));
        backends[b]->dequantize(Fp8Matrix{codes.as<uint8_t>(), scales.as<float>(), rows, cols, layout, format},
                                output.as<float>());
        results[b] = from_backend<float>(*backends[b], output, values.size());
      }
      const int64_t diff = first_difference(results[0], results[1]);
      CHECK_MESSAGE(diff == -1, describe(spec, DType::f32, rows, cols), ": first different value at ", diff);
    }
}

}  // namespace
}  // namespace fp8rl::test
