#include "core/blocks/moe_state.h"

namespace fp8rl::blocks {

void MoeState::ensure(Backend& backend, const model::ModelConfig& config, int64_t capacity, bool keeps_act) {
  if (capacity <= capacity_ && keeps_act == keeps_act_) return;
  const auto n = static_cast<size_t>(capacity);
  const auto k = static_cast<size_t>(config.moe.num_experts_per_tok);
  const auto hidden = static_cast<size_t>(config.hidden_size);
  const auto inter = static_cast<size_t>(config.moe.moe_intermediate_size);
  logits = DeviceArray<float>(backend, n * static_cast<size_t>(config.moe.num_experts));
  chosen = DeviceArray<int32_t>(backend, n * k);
  replayed = DeviceArray<int32_t>(backend, n * k);
  weights = DeviceArray<float>(backend, n * k);
  rows_of = DeviceArray<int64_t>(backend, n * k);
  slots = DeviceArray<int64_t>(backend, n * k);
  expert_in = DeviceArray<float>(backend, n * k * hidden);
  gate = DeviceArray<float>(backend, n * k * inter);
  up = DeviceArray<float>(backend, n * k * inter);
  act_ = keeps_act ? DeviceArray<float>(backend, n * k * inter) : DeviceArray<float>();
  expert_out = DeviceArray<float>(backend, n * k * hidden);
  capacity_ = capacity;
  keeps_act_ = keeps_act;
}

}  // namespace fp8rl::blocks
