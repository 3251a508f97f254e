// RoPE rotation tables, cos and sin of position * inv_freq[i], computed on
// the host in double precision and rounded once to FP32, so that every
// backend rotates with the same numbers. Grown on demand up to the model's
// max_position_embeddings.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model_config.h"
#include "core/policy/device_array.h"

namespace fp8rl::policy {

// inv_freq[i] = theta^(-2i / head_dim) for i < head_dim / 2, with Llama-3
// frequency scaling applied when the config asks for it.
std::vector<double> rope_inverse_frequencies(const model::ModelConfig& config);

class RopeTable {
 public:
  explicit RopeTable(const model::ModelConfig& config);

  // Makes the table cover positions [0, positions).
  void ensure(Backend& backend, int64_t positions);

  const float* cos() const { return cos_.data(); }  // [positions, head_dim / 2]
  const float* sin() const { return sin_.data(); }  // [positions, head_dim / 2]
  int64_t positions() const { return positions_; }

 private:
  std::vector<double> inverse_frequencies_;
  DeviceArray<float> cos_;
  DeviceArray<float> sin_;
  int64_t positions_ = 0;
};

}  // namespace fp8rl::policy
