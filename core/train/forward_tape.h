// One recorded forward pass for the backward pass: every layer's
// activations, the final residual and the pass's own indices (ids,
// positions, key ranges), copied on the backend when the pass begins. The
// backward reads only the tape, so other passes of the same runner (scoring,
// generation) may run between a training forward and its backward.
#pragma once

#include <vector>

#include "core/blocks/moe_state.h"
#include "core/model/model_config.h"
#include "core/policy/device_array.h"
#include "core/policy/pass_recorder.h"

namespace fp8rl::train {

class ForwardTape : public policy::PassRecorder {
 public:
  ForwardTape(Backend& backend, const model::ModelConfig& config);

  // policy::PassRecorder
  void begin(int64_t tokens, const policy::PassIndices& pass) override;
  policy::LayerActivations layer(size_t index) override;
  float* final_residual() override { return final_residual_.data(); }  // [tokens, hidden]

  // The recorded pass's indices in backend memory: ids, positions,
  // key_begin, key_count and max_key_count (the rest is null).
  const policy::PassIndices& indices() const { return indices_; }
  // A sparse layer's routing and experts of the pass; null for a dense layer.
  blocks::MoeState* moe(size_t layer);
  int64_t tokens() const { return tokens_; }

 private:
  void reserve(int64_t tokens);

  struct LayerStore {
    DeviceArray<float> attention_input, attention_normed, q_raw, k_raw, q, k, v, attention;
    DeviceArray<float> mlp_input, mlp_normed, gate, up, act;  // gate, up, act: dense layers
    blocks::MoeState moe;                                     // sparse layers
  };
  Backend& backend_;
  model::ModelConfig config_;
  int64_t capacity_ = 0, tokens_ = 0;
  std::vector<LayerStore> layers_;
  DeviceArray<float> final_residual_;     // [tokens, hidden] before the final norm
  DeviceArray<int32_t> ids_, positions_;  // [tokens]
  DeviceArray<int32_t> key_count_;        // [tokens]
  DeviceArray<int64_t> key_begin_;        // [tokens]
  policy::PassIndices indices_;           // pointers into the arrays above
};

}  // namespace fp8rl::train
