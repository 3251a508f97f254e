// Arguments of the Mixture-of-Experts operations of kernels/backend.h. The
// arithmetic is kernels/common/moe_routing_math.h's; like every transformer
// operation, each token's outputs depend on its own inputs only.
#pragma once

#include <cstdint>

namespace fp8rl {

// Router logits, softmax, top-k and gate weights of each token.
struct MoeRouteArgs {
  const float* x = nullptr;       // [tokens, hidden] the post-attention norm's output
  const float* router = nullptr;  // [experts, hidden] FP32 router weight (mlp.gate)
  int64_t tokens = 0;
  int64_t hidden = 0;
  int64_t experts = 0;
  int64_t top_k = 0;          // in [1, experts]
  bool normalize = false;     // norm_topk_prob: the k weights divided by their sum
  float* logits = nullptr;    // [tokens, experts] out
  int32_t* chosen = nullptr;  // [tokens, top_k] out: expert indices, best first
  float* weights = nullptr;   // [tokens, top_k] out: gate weights
};

// out[t, :] = sum_j weights[t, j] * expert_out[slot_rows[t, j], :].
struct MoeCombineArgs {
  const float* expert_out = nullptr;   // [expert_rows, hidden] the experts' outputs, grouped by expert
  const int64_t* slot_rows = nullptr;  // [tokens, top_k] each slot's row in expert_out, < expert_rows
  const float* weights = nullptr;      // [tokens, top_k]
  int64_t tokens = 0;
  int64_t hidden = 0;
  int64_t top_k = 0;
  int64_t expert_rows = 0;
  float* out = nullptr;  // [tokens, hidden]; must not overlap the inputs
};

}  // namespace fp8rl
