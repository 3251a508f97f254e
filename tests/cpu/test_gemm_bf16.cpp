// BF16 GEMM: reference, BF16 output rounding, and the same invariances.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "cpu/gemm_test_support.h"

namespace fp8rl::test {
namespace {

TEST_CASE("gemm_bf16 matches a float64 reference") {
  struct Shape {
    int64_t m, n, k;
  };
  std::mt19937 rng(31);
  for (const Shape s : {Shape{1, 1, 1}, Shape{1, 20, 7}, Shape{9, 33, 200}, Shape{21, 18, 1030}}) {
    const std::vector<uint16_t> a = random_bf16(s.m * s.k, rng), w = random_bf16(s.n * s.k, rng);
    const Reference ref = reference_gemm(bf16_reference(a), bf16_reference(w), s.m, s.n, s.k);
    for (const SimdLevel level : supported_levels()) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(std::string(simd_level_name(level)));
      std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
      const std::vector<float> c = gemm_bf16_out<float>(*backend, a, w, s.m, s.n, s.k);
      const std::vector<uint16_t> c16 = gemm_bf16_out<uint16_t>(*backend, a, w, s.m, s.n, s.k);
      for (size_t i = 0; i < c.size(); ++i) {
        REQUIRE(std::fabs(static_cast<double>(c[i]) - ref.value[i]) <= error_bound(s.k, ref.scale[i]));
        REQUIRE(c16[i] == bf16_nearest(c[i]));
      }
    }
  }
}

TEST_CASE("gemm_bf16 does not depend on batch, threads or SIMD level") {
  const int64_t m = 133, n = 75, k = 1100;
  std::mt19937 rng(32);
  const std::vector<uint16_t> a = random_bf16(m * k, rng), w = random_bf16(n * k, rng);
  std::unique_ptr<Backend> reference_backend = make_cpu_backend(1, SimdLevel::portable);
  const std::vector<float> expected = gemm_bf16_out<float>(*reference_backend, a, w, m, n, k);
  for (const SimdLevel level : supported_levels()) {
    for (const int threads : {1, 2, 3, 7}) {
      CAPTURE(std::string(simd_level_name(level)));
      CAPTURE(threads);
      std::unique_ptr<Backend> backend = make_cpu_backend(threads, level);
      CHECK(first_bit_difference(gemm_bf16_out<float>(*backend, a, w, m, n, k), expected) == -1);
      // Row 100 alone.
      const std::vector<uint16_t> row(a.begin() + 100 * k, a.begin() + 101 * k);
      const std::vector<float> single = gemm_bf16_out<float>(*backend, row, w, 1, n, k);
      CHECK(first_bit_difference(single, std::vector<float>(expected.begin() + 100 * n, expected.begin() + 101 * n)) ==
            -1);
    }
  }
}

TEST_CASE("gemm_bf16 rows do not depend on their order in the batch") {
  const int64_t m = 140, n = 33, k = 300;
  std::mt19937 rng(33);
  const std::vector<uint16_t> a = random_bf16(m * k, rng), w = random_bf16(n * k, rng);
  std::vector<int64_t> order(static_cast<size_t>(m));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<uint16_t> shuffled(a.size());
  for (int64_t i = 0; i < m; ++i)
    std::copy(a.begin() + order[static_cast<size_t>(i)] * k, a.begin() + (order[static_cast<size_t>(i)] + 1) * k,
              shuffled.begin() + i * k);
  std::unique_ptr<Backend> backend = make_cpu_backend(2);
  const std::vector<float> c = gemm_bf16_out<float>(*backend, a, w, m, n, k);
  const std::vector<float> c_shuffled = gemm_bf16_out<float>(*backend, shuffled, w, m, n, k);
  for (int64_t i = 0; i < m; ++i) {
    const int64_t source = order[static_cast<size_t>(i)];
    REQUIRE(first_bit_difference(std::vector<float>(c_shuffled.begin() + i * n, c_shuffled.begin() + (i + 1) * n),
                                 std::vector<float>(c.begin() + source * n, c.begin() + (source + 1) * n)) == -1);
  }
}

}  // namespace
}  // namespace fp8rl::test
