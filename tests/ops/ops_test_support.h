// Helpers of the transformer-operation tests. The oracles (BF16 nearest,
// E4M3 grid encoding and decoding) come from tests/cpu and tests/numerics,
// which derive them from the format definitions, not from kernels/common.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "cpu/gemm_reference.h"
#include "kernels/cpu/cpu_backend.h"
#include "numerics/fp8_reference.h"

namespace fp8rl::test {

inline void check_status(const std::function<void()>& call, Status status) {
  try {
    call();
    FAIL("no exception");
  } catch (const Error& error) {
    CHECK(error.status() == status);
  }
}

inline std::vector<float> random_floats(size_t count, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// The E4M3 code of value / scale (saturating), by the grid oracle.
inline uint8_t e4m3_of(float value, float scale) {
  return ref_encode(static_cast<double>(value / scale), Fp8Format::e4m3, /*saturate=*/true);
}

}  // namespace fp8rl::test
