// The backward of RoPE (rope_math.h): the rotation is orthogonal, so the
// gradient is the inverse rotation (the transpose) by the same angle:
//   g[i]        = g[i] * cos[i] + g[i + half] * sin[i]
//   g[i + half] = g[i + half] * cos[i] - g[i] * sin[i]
// each product and sum one IEEE rounding (no FMA).
#pragma once

#include <cstdint>

#include "float_rn.h"

namespace fp8rl {

// One pair (g[i], g[i + half]) = (lo, hi), in place, by the inverse of the angle with cosine c and sine s.
FP8RL_HD void rope_unrotate_pair(float& lo, float& hi, float c, float s) {
  const float a = lo, b = hi;
  lo = add_rn(mul_rn(a, c), mul_rn(b, s));
  hi = sub_rn(mul_rn(b, c), mul_rn(a, s));
}

// g [2 * half] of one head, in place; cos, sin [half]: the table row of the token's position.
FP8RL_HD void rope_unrotate_head(float* g, const float* cos, const float* sin, int64_t half) {
  for (int64_t i = 0; i < half; ++i) rope_unrotate_pair(g[i], g[i + half], cos[i], sin[i]);
}

}  // namespace fp8rl
