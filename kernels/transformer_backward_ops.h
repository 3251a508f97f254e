// Arguments of the backward transformer operations of kernels/backend.h (the
// building blocks of the training backward pass). Their arithmetic is defined
// once, in kernels/common/*_backward_math.h (host and device functions), so
// the CPU backend is the reference the CUDA backend will be tested against.
//
// Determinism: every output element is reduced in a fixed order that does
// not depend on the thread count or on how the work is split. Outputs that
// accumulate over rows or tokens (dweight, dtable, dk, dv) add their
// contributions in ascending row / token order (for attention: ascending
// query token, then ascending query head, into each cache row of each kv
// head), never through atomics.
#pragma once

#include <cstdint>

#include "transformer_ops.h"

namespace fp8rl {

// The backward of attention() (transformer_ops.h AttentionArgs) with
// straight-through estimation of its quantizers: the roundings of q (to BF16,
// or to E4M3 with q_scale) and of p (to BF16, or to E4M3 with scale 1/448)
// count as the identity in the backward, while the forward quantities are
// recomputed with the rounded values, exactly as attention() computes them.
// Gradients with respect to K and V are with respect to the dequantized cache
// values (code * scale for an E4M3 cache). The formulas are in
// kernels/common/attention_backward_math.h.
struct AttentionBackwardArgs {
  // q, caches, key ranges, formats and scales, as for attention(); forward.out
  // is not used (may be null).
  AttentionArgs forward;
  const float* dout = nullptr;  // [tokens, heads, head_dim] dLoss/d(attention output)
  float* dq = nullptr;          // [tokens, heads, head_dim] written: dLoss/dq (post-RoPE)
  float* dk = nullptr;          // [cache_row_count, kv_heads, head_dim] FP32, accumulated (+=)
  float* dv = nullptr;          // [cache_row_count, kv_heads, head_dim] FP32, accumulated (+=)
  int64_t cache_row_count = 0;  // rows of the caches and of dk, dv: every key range must lie inside
};

}  // namespace fp8rl
