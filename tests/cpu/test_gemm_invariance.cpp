// Batch, thread-count and SIMD-level invariance of the FP8 GEMM: the same
// output element must come out with the same bits however it is computed.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "cpu/gemm_test_support.h"

namespace fp8rl::test {
namespace {

std::vector<float> row_of(const std::vector<float>& c, int64_t n, int64_t row) {
  return std::vector<float>(c.begin() + row * n, c.begin() + (row + 1) * n);
}

TEST_CASE("gemm_fp8 rows do not depend on the batch they are computed in") {
  const int64_t m = 257, n = 70, k = 1100;  // K spans two depth chunks
  std::mt19937 rng(21);
  const Fp8Data a = random_fp8(m, k, BlockLayout::tile_1x128, rng);
  const Fp8Data w = random_fp8(n, k, BlockLayout::block_128x128, rng);
  for (const SimdLevel level : supported_levels()) {
    CAPTURE(std::string(simd_level_name(level)));
    std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
    const std::vector<float> full = gemm_fp8_f32(*backend, a, w);

    SUBCASE("one row at a time") {
      for (const int64_t row : {int64_t{0}, int64_t{1}, int64_t{130}, m - 1}) {
        CAPTURE(row);
        CHECK(first_bit_difference(gemm_fp8_f32(*backend, slice_rows(a, row, 1), w), row_of(full, n, row)) == -1);
      }
    }
    SUBCASE("a middle slice of rows") {
      const std::vector<float> part = gemm_fp8_f32(*backend, slice_rows(a, 5, 11), w);
      CHECK(first_bit_difference(part, std::vector<float>(full.begin() + 5 * n, full.begin() + 16 * n)) == -1);
    }
    SUBCASE("shuffled rows") {
      std::vector<int64_t> order(static_cast<size_t>(m));
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      Fp8Data shuffled = a;
      for (int64_t i = 0; i < m; ++i) {
        const Fp8Data row = slice_rows(a, order[static_cast<size_t>(i)], 1);
        std::copy(row.codes.begin(), row.codes.end(), shuffled.codes.begin() + i * k);
        std::copy(row.scales.begin(), row.scales.end(), shuffled.scales.begin() + i * a.blocks_per_row());
      }
      const std::vector<float> c = gemm_fp8_f32(*backend, shuffled, w);
      for (int64_t i = 0; i < m; ++i)
        REQUIRE(first_bit_difference(row_of(c, n, i), row_of(full, n, order[static_cast<size_t>(i)])) == -1);
    }
  }
}

TEST_CASE("gemm_fp8 does not depend on the thread count, at any SIMD level") {
  const int64_t m = 300, n = 530, k = 1100;  // several tasks per thread, ragged edges
  std::mt19937 rng(22);
  const Fp8Data a = random_fp8(m, k, BlockLayout::tile_1x128, rng);
  const Fp8Data w = random_fp8(n, k, BlockLayout::block_128x128, rng);
  // One thread at the fastest level is the reference for every other
  // combination: the contract fixes the bits for all of them. The portable
  // level (an order of magnitude slower) runs at 3 threads only, which split
  // the 6 tasks unevenly; the split itself is the same driver code at every level.
  const std::vector<SimdLevel> levels = supported_levels();
  std::unique_ptr<Backend> one = make_cpu_backend(1, levels.back());
  const std::vector<float> expected = gemm_fp8_f32(*one, a, w);
  const std::vector<uint16_t> expected16 = gemm_fp8_bf16(*one, a, w);
  for (const SimdLevel level : levels)
    for (const int threads : level == SimdLevel::portable ? std::vector<int>{3} : std::vector<int>{1, 2, 3, 7}) {
      CAPTURE(std::string(simd_level_name(level)));
      CAPTURE(threads);
      std::unique_ptr<Backend> backend = make_cpu_backend(threads, level);
      CHECK(first_bit_difference(gemm_fp8_f32(*backend, a, w), expected) == -1);
      CHECK(first_bit_difference(gemm_fp8_bf16(*backend, a, w), expected16) == -1);
    }
}

TEST_CASE("gemm_fp8 gives the same bits at every SIMD level") {
  struct Shape {
    int64_t m, n, k;
  };
  std::mt19937 rng(23);
  for (const Shape s : {Shape{7, 37, 1100}, Shape{64, 48, 2100}, Shape{1, 33, 13}, Shape{5, 130, 300}}) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    const Fp8Data a = random_fp8(s.m, s.k, BlockLayout::tile_1x128, rng);
    const Fp8Data w = random_fp8(s.n, s.k, BlockLayout::tile_1x128, rng);
    std::unique_ptr<Backend> portable = make_cpu_backend(2, SimdLevel::portable);
    const std::vector<float> expected = gemm_fp8_f32(*portable, a, w);
    const std::vector<uint16_t> expected16 = gemm_fp8_bf16(*portable, a, w);
    for (const SimdLevel level : supported_levels()) {
      CAPTURE(std::string(simd_level_name(level)));
      std::unique_ptr<Backend> backend = make_cpu_backend(2, level);
      CHECK(first_bit_difference(gemm_fp8_f32(*backend, a, w), expected) == -1);
      CHECK(first_bit_difference(gemm_fp8_bf16(*backend, a, w), expected16) == -1);
    }
  }
}

}  // namespace
}  // namespace fp8rl::test
