// Rotary position embedding, Hugging Face "rotate half" pairing: element i
// of a head is rotated with element i + head_dim / 2 by the angle of pair i,
//   x[i]        = x[i] * cos[i] - x[i + half] * sin[i]
//   x[i + half] = x[i + half] * cos[i] + x[i] * sin[i]
// each product and sum one IEEE rounding (no FMA).
#pragma once

#include <cstdint>

#include "float_rn.h"

namespace fp8rl {

// One pair (x[i], x[i + half]) = (lo, hi), in place, by the angle with cosine c and sine s.
FP8RL_HD void rope_rotate_pair(float& lo, float& hi, float c, float s) {
  const float a = lo, b = hi;
  lo = sub_rn(mul_rn(a, c), mul_rn(b, s));
  hi = add_rn(mul_rn(b, c), mul_rn(a, s));
}

// x [2 * half] of one head, in place; cos, sin [half]: the table row of the token's position.
FP8RL_HD void rope_rotate_head(float* x, const float* cos, const float* sin, int64_t half) {
  for (int64_t i = 0; i < half; ++i) rope_rotate_pair(x[i], x[i + half], cos[i], sin[i]);
}

}  // namespace fp8rl
