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
  // Routing replay: [tokens, top_k] experts to use instead of the router's
  // choice (each in [0, experts), distinct per token); null: the router's.
  const int32_t* replayed = nullptr;
  float* logits = nullptr;    // [tokens, experts] out
  int32_t* chosen = nullptr;  // [tokens, top_k] out: the router's own choice, best first (replayed or not)
  float* weights = nullptr;   // [tokens, top_k] out: gate weights of the experts used
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

// The backward of moe_route over a pass: dL/dlogits per token (routing
// choices have no gradient), then the router's FP32 input and weight
// gradients (kernels/common/moe_routing_math.h).
struct MoeRouteBackwardArgs {
  const float* x = nullptr;         // [tokens, hidden] the router's input
  const float* router = nullptr;    // [experts, hidden] FP32
  const float* logits = nullptr;    // [tokens, experts] of the forward
  const int32_t* used = nullptr;    // [tokens, top_k] the experts used (chosen or replayed)
  const float* weights = nullptr;   // [tokens, top_k] their gate weights
  const float* dweights = nullptr;  // [tokens, top_k] dL/dweights
  const float* aux_grad = nullptr;  // [experts] dL/dp added for every token; null: none
  int64_t tokens = 0;
  int64_t hidden = 0;
  int64_t experts = 0;
  int64_t top_k = 0;
  bool normalize = false;
  float* dlogits = nullptr;  // [tokens, experts] out
  float* dx = nullptr;       // [tokens, hidden] accumulated (+=) dL/dx
  float* drouter = nullptr;  // [experts, hidden] accumulated (+=) dL/drouter
};

// The backward of moe_combine: dexpert_out[slot_rows[t, j], :] =
// weights[t, j] * dout[t, :] and dweights[t, j] = dout[t, :] . expert_out[slot_rows[t, j], :].
// Every expert row must be some slot's (rows grouped from the slots), so
// that all of dexpert_out is written.
struct MoeCombineBackwardArgs {
  const float* dout = nullptr;         // [tokens, hidden]
  const float* expert_out = nullptr;   // [expert_rows, hidden]
  const int64_t* slot_rows = nullptr;  // [tokens, top_k]
  const float* weights = nullptr;      // [tokens, top_k]
  int64_t tokens = 0;
  int64_t hidden = 0;
  int64_t top_k = 0;
  int64_t expert_rows = 0;
  float* dexpert_out = nullptr;  // [expert_rows, hidden] out
  float* dweights = nullptr;     // [tokens, top_k] out
};

}  // namespace fp8rl
