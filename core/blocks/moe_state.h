// What one sparse layer's forward pass leaves behind: its routing and every
// expert's intermediates, grouped by expert. Inference reuses one MoeState
// (the runner's workspace) for every sparse layer; training keeps one per
// sparse layer (ForwardTape) for the backward pass (moe_mlp.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model_config.h"
#include "core/policy/device_array.h"

namespace fp8rl::blocks {

struct MoeState {
  // Arrays for `capacity` tokens; keeps_act gives the SwiGLU output its own
  // array (the backward needs gate and up as they were), else it overwrites gate.
  void ensure(Backend& backend, const model::ModelConfig& config, int64_t capacity, bool keeps_act);
  float* act() { return keeps_act_ ? act_.data() : gate.data(); }  // [rows, moe_intermediate]
  const float* act() const { return keeps_act_ ? act_.data() : gate.data(); }
  // The experts the pass used [tokens, k], on the backend: the replayed ones
  // when the pass replayed, else the router's choice.
  const int32_t* used() const { return replaying ? replayed.data() : chosen.data(); }
  int64_t rows(int64_t expert) const { return offsets[static_cast<size_t>(expert) + 1] - first_row(expert); }
  int64_t first_row(int64_t expert) const { return offsets[static_cast<size_t>(expert)]; }

  int64_t tokens = 0;             // of the last pass
  bool replaying = false;         // the last pass used `replay`'s experts
  DeviceArray<float> logits;      // [tokens, experts] FP32 router logits
  DeviceArray<int32_t> chosen;    // [tokens, k] the router's own choice, best first
  DeviceArray<int32_t> replayed;  // [tokens, k] the replayed choice (routing replay)
  DeviceArray<float> weights;     // [tokens, k] gate weights of the experts used
  DeviceArray<int64_t> rows_of;   // [tokens * k] the token of each expert row
  DeviceArray<int64_t> slots;     // [tokens, k] the expert row of each (token, slot)
  DeviceArray<float> expert_in;   // [tokens * k, hidden] the experts' input rows, grouped by expert
  DeviceArray<float> gate, up;    // [tokens * k, moe_intermediate] projections before SwiGLU
  DeviceArray<float> expert_out;  // [tokens * k, hidden] the experts' outputs
  std::vector<int32_t> chosen_host;  // [tokens, k] the router's own choice
  std::vector<int32_t> used_host;    // [tokens, k] the experts used: replayed, else chosen_host
  std::vector<int64_t> offsets;      // [experts + 1] each expert's first row; rows ascend by token within one
  // Host [tokens, k] experts for the next pass to use instead of the
  // router's choice (routing replay), or null; the owner keeps it valid.
  const int32_t* replay = nullptr;

 private:
  int64_t capacity_ = 0;
  bool keeps_act_ = false;
  DeviceArray<float> act_;  // [tokens * k, moe_intermediate] when keeps_act
};

// Scratch of the sparse layers' backward pass, grown as needed.
struct MoeBackwardScratch {
  DeviceArray<float> dexpert_out, dexpert_in;  // [tokens * k, hidden]
  DeviceArray<float> dact, dgate, dup;         // [tokens * k, moe_intermediate]
  DeviceArray<float> dweights, ones;           // [tokens * k]
  DeviceArray<float> dlogits;                  // [tokens, experts]
  int64_t capacity = 0;                        // tokens
};

}  // namespace fp8rl::blocks
