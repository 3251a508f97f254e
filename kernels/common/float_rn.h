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

// a * b + c with a single rounding: an explicit FMA on both sides (std::fma
// on the host, so it never depends on whether the compiler contracts).
FP8RL_HD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
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

// Double precision, for the float64 reductions (reduction_order.h).
FP8RL_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

FP8RL_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

}  // namespace fp8rl
