// Calls into the CPU backend shared by the GEMM test files.
#pragma once

#include <memory>
#include <vector>

#include "cpu/gemm_reference.h"
#include "kernels/cpu/cpu_backend.h"

namespace fp8rl::test {

// Every SIMD level this CPU can run, portable first.
inline std::vector<SimdLevel> supported_levels() {
  std::vector<SimdLevel> levels{SimdLevel::portable};
  const SimdLevel best = detect_simd_level();
  if (best >= SimdLevel::avx2) levels.push_back(SimdLevel::avx2);
  if (best >= SimdLevel::avx512) levels.push_back(SimdLevel::avx512);
  if (best >= SimdLevel::avx512_bf16) levels.push_back(SimdLevel::avx512_bf16);
  return levels;
}

inline std::vector<float> gemm_fp8_f32(Backend& backend, const Fp8Data& a, const Fp8Data& w) {
  std::vector<float> c(static_cast<size_t>(a.rows * w.rows));
  backend.gemm_fp8(a.view(), w.view(), c.data(), DType::f32);
  return c;
}

inline std::vector<uint16_t> gemm_fp8_bf16(Backend& backend, const Fp8Data& a, const Fp8Data& w) {
  std::vector<uint16_t> c(static_cast<size_t>(a.rows * w.rows));
  backend.gemm_fp8(a.view(), w.view(), c.data(), DType::bf16);
  return c;
}

inline std::vector<uint16_t> random_bf16(int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> bits(static_cast<size_t>(count));
  for (uint16_t& b : bits) b = static_cast<uint16_t>(bits_of(normal(rng)) >> 16);  // truncation: any BF16 will do
  return bits;
}

template <class Out>
std::vector<Out> gemm_bf16_out(Backend& backend, const std::vector<uint16_t>& a, const std::vector<uint16_t>& w,
                               int64_t m, int64_t n, int64_t k) {
  std::vector<Out> c(static_cast<size_t>(m * n));
  backend.gemm_bf16(a.data(), w.data(), m, n, k, c.data(), sizeof(Out) == 4 ? DType::f32 : DType::bf16);
  return c;
}

}  // namespace fp8rl::test
