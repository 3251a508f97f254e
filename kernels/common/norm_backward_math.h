// The backward of RMSNorm (norm_math.h), in FP32 with one IEEE rounding per
// operation (float_rn.h). With inv = rms_inverse(ss, dim, eps) recomputed
// exactly as the forward computes it (same bits), y_i = x_i * inv * w_i gives
//   c     = sum_i (w_i * dy_i) * x_i          (lane order of lane_dot.h)
//   dx_i  = (w_i * dy_i) * inv - x_i * ((inv * inv * inv) * (c / dim))
//   dw_i += (x_i * inv) * dy_i                (summed over rows, ascending)
// since d inv / d x_i = -inv^3 x_i / dim.
#pragma once

#include "lane_dot.h"
#include "norm_math.h"

namespace fp8rl {

// The inverse RMS of one row, as rms_norm_row() computes it.
FP8RL_HD float rms_norm_row_inverse(const float* x, int64_t dim, float eps) {
  return rms_inverse(lane_dot(x, x, dim), dim, eps);
}

// One term of rms_weighted_dot: (w * dy) * x.
FP8RL_HD float rms_weighted_term(float x, float w, float dy) { return mul_rn(mul_rn(w, dy), x); }

// sum_i (w[i] * dy[i]) * x[i] in the lane order of lane_dot.h.
FP8RL_HD float rms_weighted_dot(const float* x, const float* w, const float* dy, int64_t dim) {
  float lane[kDotLanes] = {};
  int64_t i = 0;
  for (; i + kDotLanes <= dim; i += kDotLanes)
    for (int j = 0; j < kDotLanes; ++j) lane[j] = add_rn(lane[j], rms_weighted_term(x[i + j], w[i + j], dy[i + j]));
  for (int j = 0; i + j < dim; ++j) lane[j] = add_rn(lane[j], rms_weighted_term(x[i + j], w[i + j], dy[i + j]));
  return reduce_dot_lanes(lane);
}

// The row's coefficient of x_i in dx: (inv * inv * inv) * (c / dim), c = rms_weighted_dot().
FP8RL_HD float rms_backward_coef(float inv, float c, int64_t dim) {
  return mul_rn(mul_rn(mul_rn(inv, inv), inv), div_rn(c, static_cast<float>(dim)));
}

// One element of dx: (w * dy) * inv - x * coef.
FP8RL_HD float rms_norm_backward_value(float x, float w, float dy, float inv, float coef) {
  return sub_rn(mul_rn(mul_rn(w, dy), inv), mul_rn(x, coef));
}

// dx [dim] of one row; x, w, dy [dim]; inv from rms_norm_row_inverse(). dx
// may alias x or dy: element i is written after its inputs are read.
FP8RL_HD void rms_norm_backward_row(const float* x, const float* w, const float* dy, int64_t dim, float inv,
                                    float* dx) {
  const float coef = rms_backward_coef(inv, rms_weighted_dot(x, w, dy, dim), dim);
  for (int64_t i = 0; i < dim; ++i) dx[i] = rms_norm_backward_value(x[i], w[i], dy[i], inv, coef);
}

// One row's contribution to dweight[i]: (x_i * inv) * dy_i.
FP8RL_HD float rms_norm_weight_grad(float x, float inv, float dy) { return mul_rn(mul_rn(x, inv), dy); }

}  // namespace fp8rl
