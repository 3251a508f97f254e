// The optimizer and calibration operations on the GPU (kernels/backend.h).
// The arithmetic is kernels/common's, the same functions the CPU backend
// calls (adamw_math.h, reduction_order.h, abs_max_math.h), and the sum of
// squares runs in reduction_order.h's fixed order, so every result is
// bit-identical to the CPU backend's (NaN payloads aside). No atomics: the
// reductions go through per-chunk partials and fixed trees.
//
// Arguments are validated by the backend (optimizer_checks.h) before these
// are called, so counts are positive here.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "../common/adamw_math.h"

namespace fp8rl::cuda {

// adamw_update_element on each of count elements, one thread per element.
// params, exp_avg, exp_avg_sq [count] in place; grads [count]. Bit-identical.
void launch_adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                         const AdamWScalars& scalars, cudaStream_t stream);

// Bytes of workspace launch_sum_of_squares and launch_first_non_finite need
// for count values: the per-chunk partials and one level of block results.
size_t reduction_workspace_bytes(int64_t count);

// Enqueues the sum of squares of x [count] in reduction_order.h's order and
// returns where in workspace (reduction_workspace_bytes) the double result
// will be once the stream gets there.
const double* launch_sum_of_squares(const float* x, int64_t count, void* workspace, cudaStream_t stream);

// Enqueues the search for the smallest i whose apply_grad_scale(x[i], scale)
// is not finite; returns where in workspace the result will be: that index,
// or -1 (all bits set) when there is none.
const int64_t* launch_first_non_finite(const float* x, int64_t count, float scale, void* workspace,
                                       cudaStream_t stream);

// out[r] = the abs_max_update fold of row r, x [rows, cols], out [rows]. One
// warp per row, combined in a tree (any order gives the same bits,
// abs_max_math.h).
void launch_row_abs_max(const float* x, int64_t rows, int64_t cols, float* out, cudaStream_t stream);

}  // namespace fp8rl::cuda
