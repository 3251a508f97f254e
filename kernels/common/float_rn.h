// Single-precision arithmetic with exactly one IEEE rounding per operation.
//
// The CPU kernels are compiled with -ffp-contract=off; nvcc contracts a * b + c
// into an FMA by default, which changes the bits. The row functions of
// kernels/common write every multiply and add through these helpers, so CPU and
// CUDA compute the same bits whatever the compiler flags.
#pragma once

#include <cmath>

#include "host_device.h"

namespace fp8rl {

FP8RL_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

FP8RL_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

FP8RL_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// Correctly rounded square root (also under nvcc -prec-sqrt=false).
FP8RL_HD float sqrt_rn(float x) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

}  // namespace fp8rl
