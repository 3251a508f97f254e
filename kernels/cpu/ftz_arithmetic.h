// FP32 arithmetic with x86's flush-to-zero and denormals-are-zero, in plain
// C++: the portable GEMM's model of VDPBF16PS and of the SIMD kernels' MXCSR
// mode (gemm_float_mode.h). Operands below 2^-126 in magnitude read as zero
// of their sign; a result is rounded to nearest even as if the exponent were
// unbounded and flushed to zero of its sign when that is below 2^-126 (x86
// judges tininess after rounding: measured on Zen 4, docs/numerics.md).
//
// Assumes the default FP environment (no FTZ/DAZ of its own, nearest even).
#pragma once

#include <cmath>

namespace fp8rl::cpu {

constexpr float kSmallestNormal = 0x1p-126f;

inline float denormal_as_zero(float x) { return std::fabs(x) < kSmallestNormal ? std::copysign(0.0f, x) : x; }

// The flushed result, given the IEEE result r (gradual underflow) and the
// same operation on operands scaled by 2^32 each (2^64 for an addend), which
// rounds without the exponent floor. Scaling is exact: a result at most
// 2^-126 from operands that are normal or zero cannot come from an operand
// near the overflow threshold (their products and sums would be multiples of
// far more than 2^-126).
template <class Scaled>
float flush_after_rounding(float r, Scaled scaled_operation) {
  if (!(std::fabs(r) <= kSmallestNormal) || r == 0.0f) return r;  // NaN, normal, or an exact or underflowed zero
  const float scaled = scaled_operation();
  return std::fabs(scaled) < 0x1p-62f ? std::copysign(0.0f, scaled) : scaled * 0x1p-64f;
}

// a * b + c, one rounding.
inline float fma_ftz(float a, float b, float c) {
  a = denormal_as_zero(a);
  b = denormal_as_zero(b);
  c = denormal_as_zero(c);
  if (a == 0.0f || b == 0.0f) return std::fma(a, b, c);  // c itself (or an exact zero): nothing to flush, and
                                                         // scaling the other factor could overflow into inf * 0
  return flush_after_rounding(std::fma(a, b, c), [&] { return std::fma(a * 0x1p32f, b * 0x1p32f, c * 0x1p64f); });
}

// a + b: a * 1 + b is exact in the product, so it is fma_ftz's rounding.
inline float add_ftz(float a, float b) { return fma_ftz(a, 1.0f, b); }

inline float mul_ftz(float a, float b) {
  a = denormal_as_zero(a);
  b = denormal_as_zero(b);
  return flush_after_rounding(a * b, [&] { return (a * 0x1p32f) * (b * 0x1p32f); });
}

}  // namespace fp8rl::cpu
