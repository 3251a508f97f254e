// The optimizer and calibration operations on the CPU (kernels/backend.h),
// each over a range of elements, chunks or rows so the backend can spread
// them over threads. The arithmetic and the summation order are
// kernels/common's (adamw_math.h, reduction_order.h, abs_max_math.h); these
// loops only lay them over memory, so the split never changes a bit.
#pragma once

#include "../backend.h"

namespace fp8rl::cpu {

// adamw_update_element on elements [begin, end) of params, grads, exp_avg, exp_avg_sq.
void adamw_span(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, const AdamWScalars& scalars,
                int64_t begin, int64_t end);
// partials[c] = the chunk sum of chunk c of x [count] (reduction_order.h), for chunks [begin, end).
void square_sum_chunks(const float* x, int64_t count, double* partials, int64_t begin, int64_t end);
// The smallest i in [begin, end) whose apply_grad_scale(x[i], scale) is not finite, or -1.
int64_t first_non_finite_span(const float* x, float scale, int64_t begin, int64_t end);
// out[r] = the abs_max_update fold of row r of x [rows, cols], for rows [begin, end).
void row_abs_max_rows(const float* x, int64_t cols, float* out, int64_t begin, int64_t end);

}  // namespace fp8rl::cpu
