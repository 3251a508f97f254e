// RMSNorm of one row: out[i] = (x[i] * inv) * w[i] with
// inv = 1 / sqrt(ss / dim + eps) and ss = sum of x[i]^2 in the lane order of
// lane_dot.h, every operation one IEEE rounding (float_rn.h).
#pragma once

#include "lane_dot.h"

namespace fp8rl {

FP8RL_HD float rms_inverse(float sum_squares, int64_t dim, float eps) {
  return div_rn(1.0f, sqrt_rn(add_rn(div_rn(sum_squares, static_cast<float>(dim)), eps)));
}

// One output element: (x * inv) * w.
FP8RL_HD float rms_norm_value(float x, float inv, float weight) { return mul_rn(mul_rn(x, inv), weight); }

// x, out [dim] (may alias), weight [dim].
FP8RL_HD void rms_norm_row(const float* x, const float* weight, int64_t dim, float eps, float* out) {
  const float inv = rms_inverse(lane_dot(x, x, dim), dim, eps);
  for (int64_t i = 0; i < dim; ++i) out[i] = rms_norm_value(x[i], inv, weight[i]);
}

}  // namespace fp8rl
