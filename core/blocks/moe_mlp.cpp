#include "core/blocks/moe_mlp.h"

#include "kernels/error.h"

namespace fp8rl::blocks {

using model::ExpertLinear;

void MoeMlp::ensure(const model::ModelConfig& config, int64_t tokens) {
  if (tokens <= capacity_tokens_) return;
  const auto n = static_cast<size_t>(tokens);
  const auto k = static_cast<size_t>(config.moe.num_experts_per_tok);
  const auto hidden = static_cast<size_t>(config.hidden_size);
  const auto inter = static_cast<size_t>(config.moe.moe_intermediate_size);
  logits_ = DeviceArray<float>(backend_, n * static_cast<size_t>(config.moe.num_experts));
  chosen_ = DeviceArray<int32_t>(backend_, n * k);
  weights_ = DeviceArray<float>(backend_, n * k);
  rows_ = DeviceArray<int64_t>(backend_, n * k);
  slots_ = DeviceArray<int64_t>(backend_, n * k);
  expert_in_ = DeviceArray<float>(backend_, n * k * hidden);
  gate_ = DeviceArray<float>(backend_, n * k * inter);
  up_ = DeviceArray<float>(backend_, n * k * inter);
  expert_out_ = DeviceArray<float>(backend_, n * k * hidden);
  capacity_tokens_ = tokens;
}

std::vector<int64_t> MoeMlp::group_by_expert(int64_t tokens, int64_t experts, int64_t k) {
  const size_t slots = static_cast<size_t>(tokens * k);
  std::vector<int64_t> offsets(static_cast<size_t>(experts) + 1, 0);
  for (size_t s = 0; s < slots; ++s) {
    const int32_t e = chosen_host_[s];
    if (e < 0 || e >= experts) fail(Status::internal, "moe: the router chose expert " + std::to_string(e));
    ++offsets[static_cast<size_t>(e) + 1];
  }
  for (size_t e = 0; e < static_cast<size_t>(experts); ++e) offsets[e + 1] += offsets[e];
  std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
  rows_host_.resize(slots);
  slots_host_.resize(slots);
  for (size_t s = 0; s < slots; ++s) {  // token-major, so tokens ascend within each expert
    const int64_t row = next[static_cast<size_t>(chosen_host_[s])]++;
    rows_host_[static_cast<size_t>(row)] = static_cast<int64_t>(s) / k;
    slots_host_[s] = row;
  }
  return offsets;
}

void MoeMlp::forward(const LinearForward& linear, const policy::CompiledLayer& layer, const model::ModelConfig& config,
                     int64_t tokens, const float* normed, float* out) {
  if (tokens == 0) return;
  ensure(config, tokens);
  const int64_t hidden = config.hidden_size, inter = config.moe.moe_intermediate_size;
  const int64_t experts = config.moe.num_experts, k = config.moe.num_experts_per_tok;

  MoeRouteArgs route;
  route.x = normed;
  route.router = layer.linear(model::Linear::router).f32.data();
  route.tokens = tokens;
  route.hidden = hidden;
  route.experts = experts;
  route.top_k = k;
  route.normalize = config.moe.norm_topk_prob;
  route.logits = logits_.data();
  route.chosen = chosen_.data();
  route.weights = weights_.data();
  backend_.moe_route(route);

  // The grouping is host work over tokens * k indices: the row counts of the
  // expert GEMMs have to be known on the host anyway.
  const size_t slots = static_cast<size_t>(tokens * k);
  chosen_host_.resize(slots);
  chosen_.download(chosen_host_.data(), slots);
  const std::vector<int64_t> offsets = group_by_expert(tokens, experts, k);
  rows_.upload(rows_host_.data(), slots);
  slots_.upload(slots_host_.data(), slots);
  backend_.gather_rows(normed, hidden, rows_.data(), static_cast<int64_t>(slots), expert_in_.data());

  for (int64_t e = 0; e < experts; ++e) {
    const int64_t first = offsets[static_cast<size_t>(e)], rows = offsets[static_cast<size_t>(e) + 1] - first;
    if (rows == 0) continue;  // an expert no token chose runs nothing
    const policy::CompiledExpert& expert = layer.experts[static_cast<size_t>(e)];
    float* gate = gate_.data() + first * inter;  // [rows, moe_intermediate]
    float* up = up_.data() + first * inter;      // [rows, moe_intermediate]
    linear(expert.linear(ExpertLinear::gate), expert_in_.data() + first * hidden, rows, gate);
    linear(expert.linear(ExpertLinear::up), expert_in_.data() + first * hidden, rows, up);
    backend_.swiglu(gate, up, rows * inter, gate);
    linear(expert.linear(ExpertLinear::down), gate, rows, expert_out_.data() + first * hidden);
  }

  MoeCombineArgs combine;
  combine.expert_out = expert_out_.data();
  combine.slot_rows = slots_.data();
  combine.weights = weights_.data();
  combine.tokens = tokens;
  combine.hidden = hidden;
  combine.top_k = k;
  combine.expert_rows = static_cast<int64_t>(slots);
  combine.out = out;
  backend_.moe_combine(combine);
}

}  // namespace fp8rl::blocks
