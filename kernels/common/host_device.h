// Portability layer for math shared by the CPU and CUDA backends.
//
// Every function in kernels/common is compiled twice: by the host compiler
// for the CPU backend and by nvcc for the CUDA kernels. Both must produce the
// same bits, so the helpers here pin down the few operations whose rounding
// could otherwise depend on compiler flags (division, float<->bits casts).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FP8RL_HD __host__ __device__ __forceinline__
#else
#define FP8RL_HD inline
#endif

namespace fp8rl {

FP8RL_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

FP8RL_HD float bits_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

// IEEE round-to-nearest division on both sides: nvcc may otherwise emit an
// approximate division under -use_fast_math, which would break the bitwise
// agreement between CPU and GPU quantization.
FP8RL_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

FP8RL_HD bool is_finite_bits(uint32_t bits) { return (bits & 0x7F800000u) != 0x7F800000u; }
FP8RL_HD bool is_nan_bits(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

}  // namespace fp8rl
