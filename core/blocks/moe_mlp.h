// The Mixture-of-Experts MLP of a sparse layer (Qwen3-MoE), forward:
//
//   logits = bf16(h) . router^T          FP32 under every recipe
//   p      = softmax(logits)             FP32
//   e[t,j] = the k most probable experts of token t, best first; ties: lower index
//   w[t,j] = p[t, e[t,j]], divided by their sum when norm_topk_prob
//   out[t] = sum_j w[t,j] * expert_{e[t,j]}(h[t]),   expert(x) = down(silu(gate(x)) * up(x))
//
// Dropless (no capacity factor). The rows of all experts are gathered into
// one buffer grouped by expert, tokens ascending within an expert, and each
// expert runs its projections once over its rows, in the layer's recipe
// (E4M3 in the expert's own 128x128 blocks, or BF16). Every linear layer
// computes each row from that row alone and routing and combine are per
// token (kernels/common/moe_routing_math.h), so a token's output does not
// depend on which tokens share its batch or its experts: generation, scoring
// and the training forward route every token identically.
#pragma once

#include <cstdint>
#include <vector>

#include "core/blocks/linear_forward.h"
#include "core/model/model_config.h"
#include "core/policy/compiled_model.h"
#include "core/policy/device_array.h"

namespace fp8rl::blocks {

class MoeMlp {
 public:
  explicit MoeMlp(Backend& backend) : backend_(backend) {}

  // out [tokens, hidden] = the sparse layer's MLP of normed [tokens, hidden].
  void forward(const LinearForward& linear, const policy::CompiledLayer& layer, const model::ModelConfig& config,
               int64_t tokens, const float* normed, float* out);

  // The experts the last forward chose: [tokens, k], best first.
  const std::vector<int32_t>& chosen() const { return chosen_host_; }

 private:
  // Groups the (token, slot) pairs by expert: rows_host_ and slots_host_,
  // and each expert's first row. Returns the row offsets [experts + 1].
  std::vector<int64_t> group_by_expert(int64_t tokens, int64_t experts, int64_t k);
  void ensure(const model::ModelConfig& config, int64_t tokens);

  Backend& backend_;
  int64_t capacity_tokens_ = 0;
  DeviceArray<float> logits_;         // [tokens, experts]
  DeviceArray<int32_t> chosen_;       // [tokens, k]
  DeviceArray<float> weights_;        // [tokens, k]
  DeviceArray<int64_t> rows_;         // [tokens * k] the token of each expert row
  DeviceArray<int64_t> slots_;        // [tokens, k] the expert row of each slot
  DeviceArray<float> expert_in_;      // [tokens * k, hidden] grouped by expert
  DeviceArray<float> gate_;           // [tokens * k, moe_intermediate]
  DeviceArray<float> up_;             // [tokens * k, moe_intermediate]
  DeviceArray<float> expert_out_;     // [tokens * k, hidden]
  std::vector<int32_t> chosen_host_;  // [tokens, k]
  std::vector<int64_t> rows_host_;    // [tokens * k]
  std::vector<int64_t> slots_host_;   // [tokens, k]
};

}  // namespace fp8rl::blocks
