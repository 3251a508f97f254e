// FP8 GEMM against a float64 reference on independently dequantized inputs.
#include <doctest/doctest.h>

#include <string>

#include "cpu/gemm_test_support.h"

namespace fp8rl::test {
namespace {

struct Shape {
  int64_t m, n, k;
};

// Partial 16-lane groups, partial 128 blocks, K < 16, M = 1, tails of every
// micro-tile height, and K beyond one depth chunk (1024).
const Shape kShapes[] = {{1, 1, 1},     {1, 17, 5},    {3, 5, 16},     {5, 33, 130},  {4, 16, 128},
                         {17, 70, 255}, {2, 129, 300}, {33, 40, 1100}, {6, 19, 2100}, {130, 131, 64}};

void check_against_reference(const std::vector<float>& c, const Reference& ref, const Shape& s) {
  for (int64_t i = 0; i < s.m * s.n; ++i) {
    const double error = std::fabs(static_cast<double>(c[static_cast<size_t>(i)]) - ref.value[static_cast<size_t>(i)]);
    const double bound = error_bound(s.k, ref.scale[static_cast<size_t>(i)]);
    if (!(error <= bound)) {
      FAIL_CHECK("C[" << i / s.n << ", " << i % s.n << "] = " << c[static_cast<size_t>(i)] << ", reference "
                      << ref.value[static_cast<size_t>(i)] << ", error " << error << " > bound " << bound);
      return;
    }
  }
}

void check_shapes(BlockLayout w_layout) {
  std::mt19937 rng(7);
  for (const Shape& s : kShapes) {
    const Fp8Data a = random_fp8(s.m, s.k, BlockLayout::tile_1x128, rng);
    const Fp8Data w = random_fp8(s.n, s.k, w_layout, rng);
    const Reference ref = reference_gemm(dequantize_reference(a), dequantize_reference(w), s.m, s.n, s.k);
    for (const SimdLevel level : supported_levels()) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(std::string(simd_level_name(level)));
      std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
      check_against_reference(gemm_fp8_f32(*backend, a, w), ref, s);
    }
  }
}

TEST_CASE("gemm_fp8 matches a float64 reference, W in 128x128 blocks") { check_shapes(BlockLayout::block_128x128); }

TEST_CASE("gemm_fp8 matches a float64 reference, W in 1x128 tiles") { check_shapes(BlockLayout::tile_1x128); }

TEST_CASE("gemm_fp8 BF16 output is the round-to-nearest-even of the FP32 output") {
  std::mt19937 rng(11);
  const Fp8Data a = random_fp8(37, 300, BlockLayout::tile_1x128, rng);
  const Fp8Data w = random_fp8(45, 300, BlockLayout::block_128x128, rng);
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::unique_ptr<Backend> backend = make_cpu_backend(3, level);
    const std::vector<float> c32 = gemm_fp8_f32(*backend, a, w);
    const std::vector<uint16_t> c16 = gemm_fp8_bf16(*backend, a, w);
    for (size_t i = 0; i < c32.size(); ++i) REQUIRE(c16[i] == bf16_nearest(c32[i]));
  }
}

TEST_CASE("gemm_fp8 on operands quantized by the backend") {
  // The real pipeline: f32 activations and weights through backend.quantize.
  const int64_t m = 19, n = 150, k = 520;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> a(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k));
  for (float& x : a) x = normal(rng);
  for (float& x : w) x = normal(rng) * 0.01f;
  std::unique_ptr<Backend> backend = make_cpu_backend(2);       // quantizes; the GEMM runs at every level below
  Fp8Data aq = random_fp8(m, k, BlockLayout::tile_1x128, rng);  // sizes only; overwritten
  Fp8Data wq = random_fp8(n, k, BlockLayout::block_128x128, rng);
  QuantSpec spec;
  backend->quantize(a.data(), DType::f32, m, k, spec, aq.codes.data(), aq.scales.data());
  spec.layout = BlockLayout::block_128x128;
  backend->quantize(w.data(), DType::f32, n, k, spec, wq.codes.data(), wq.scales.data());
  const Reference ref = reference_gemm(dequantize_reference(aq), dequantize_reference(wq), m, n, k);
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::unique_ptr<Backend> gemm = make_cpu_backend(2, level);
    check_against_reference(gemm_fp8_f32(*gemm, aq, wq), ref, Shape{m, n, k});
  }
  // And the quantized GEMM is close to the unquantized product.
  const Reference exact = reference_gemm(a, w, m, n, k);
  for (size_t i = 0; i < exact.value.size(); ++i)
    CHECK(std::fabs(ref.value[i] - exact.value[i]) <= 0.15 * exact.scale[i] + 1e-6);
}

TEST_CASE("gemm_fp8 with no rows computes nothing") {
  std::mt19937 rng(5);
  const Fp8Data a = random_fp8(0, 64, BlockLayout::tile_1x128, rng);
  const Fp8Data w = random_fp8(8, 64, BlockLayout::block_128x128, rng);
  std::unique_ptr<Backend> backend = make_cpu_backend(2);
  Fp8Matrix a_view = a.view();
  uint8_t code = 0;
  float scale = 1.0f;
  a_view.codes = &code;  // a valid pointer for zero rows
  a_view.scales = &scale;
  CHECK_NOTHROW(backend->gemm_fp8(a_view, w.view(), nullptr, DType::f32));
}

}  // namespace
}  // namespace fp8rl::test
