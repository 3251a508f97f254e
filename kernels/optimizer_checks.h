// Argument checks of the optimizer and calibration operations (backend.h),
// shared by every backend so that they refuse the same calls with the same
// messages. Each returns false when there is nothing to do (a count or row
// count of 0), and then the pointers are not looked at.
#pragma once

#include <cmath>
#include <string>

#include "backend.h"
#include "transformer_checks.h"

namespace fp8rl {

inline bool all_finite(const AdamWScalars& s) {
  for (const float x : {s.grad_scale, s.decay_mul, s.beta1, s.one_minus_beta1, s.beta2, s.one_minus_beta2,
                        s.bias_correction2_sqrt, s.neg_step_size, s.eps})
    if (!std::isfinite(x)) return false;
  return true;
}

inline bool check_adamw_update_args(const float* params, const float* grads, const float* exp_avg,
                                    const float* exp_avg_sq, int64_t count, const AdamWScalars& scalars) {
  // Before the count: non-finite scalars would silently turn every parameter into NaN.
  require(all_finite(scalars), "adamw_update: the scalars must be finite");
  return check_elementwise_args("adamw_update", count, {params, grads, exp_avg, exp_avg_sq});
}

inline bool check_sum_of_squares_args(const float* x, int64_t count) {
  return check_elementwise_args("sum_of_squares", count, {x});
}

inline bool check_first_non_finite_args(const float* x, int64_t count) {
  return check_elementwise_args("first_non_finite", count, {x});
}

inline bool check_row_abs_max_args(const float* x, int64_t rows, int64_t cols, const float* out) {
  if (!check_rows("row_abs_max", rows, "rows", cols, "cols")) return false;
  require_pointers(x && out, "row_abs_max");
  return true;
}

}  // namespace fp8rl
