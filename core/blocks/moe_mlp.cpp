#include "core/blocks/moe_mlp.h"

#include <string>
#include <vector>

#include "kernels/error.h"

namespace fp8rl::blocks {
namespace {

using model::ExpertLinear;

size_t as_size(int64_t value) { return static_cast<size_t>(value); }

// Groups the (token, slot) pairs of `used` [tokens, k] by expert, token-major
// so that tokens ascend within each expert: state.offsets and, uploaded,
// the token of each expert row and the row of each slot.
void group_by_expert(const std::vector<int32_t>& used, int64_t experts, int64_t k, MoeState& state) {
  const size_t slots = used.size();
  state.offsets.assign(as_size(experts) + 1, 0);
  for (const int32_t e : used) {
    if (e < 0 || e >= experts) fail(Status::internal, "moe: routed to expert " + std::to_string(e));
    ++state.offsets[as_size(e) + 1];
  }
  for (size_t e = 0; e < as_size(experts); ++e) state.offsets[e + 1] += state.offsets[e];
  std::vector<int64_t> next(state.offsets.begin(), state.offsets.end() - 1);
  std::vector<int64_t> rows(slots), slot_rows(slots);
  for (size_t s = 0; s < slots; ++s) {
    const int64_t row = next[as_size(used[s])]++;
    rows[as_size(row)] = static_cast<int64_t>(s) / k;
    slot_rows[s] = row;
  }
  state.rows_of.upload(rows.data(), slots);
  state.slots.upload(slot_rows.data(), slots);
}

// The replayed experts [tokens, k] must be valid, distinct choices: the
// combine and the backward count on each expert appearing once per token.
void check_replay(const int32_t* replay, int64_t tokens, int64_t experts, int64_t k) {
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t* row = replay + t * k;
    for (int64_t j = 0; j < k; ++j) {
      require(row[j] >= 0 && row[j] < experts, "routing replay: token " + std::to_string(t) + " names expert " +
                                                   std::to_string(row[j]) + ", outside [0, " +
                                                   std::to_string(experts) + ")");
      for (int64_t i = 0; i < j; ++i)
        require(row[i] != row[j], "routing replay: token " + std::to_string(t) + " names expert " +
                                      std::to_string(row[j]) + " twice");
    }
  }
}

void ensure_backward_scratch(Backend& backend, const model::ModelConfig& config, int64_t tokens,
                             MoeBackwardScratch& s) {
  if (tokens <= s.capacity) return;
  const size_t n = as_size(tokens), k = as_size(config.moe.num_experts_per_tok);
  const size_t hidden = as_size(config.hidden_size), inter = as_size(config.moe.moe_intermediate_size);
  s.dexpert_out = DeviceArray<float>(backend, n * k * hidden);
  s.dexpert_in = DeviceArray<float>(backend, n * k * hidden);
  s.dact = DeviceArray<float>(backend, n * k * inter);
  s.dgate = DeviceArray<float>(backend, n * k * inter);
  s.dup = DeviceArray<float>(backend, n * k * inter);
  s.dweights = DeviceArray<float>(backend, n * k);
  s.ones = DeviceArray<float>(backend, n * k);
  const std::vector<float> ones(n * k, 1.0f);
  s.ones.upload(ones.data(), n * k);
  s.dlogits = DeviceArray<float>(backend, n * as_size(config.moe.num_experts));
  s.capacity = tokens;
}

// out [tokens, hidden] = each token's k rows of `rows` [tokens * k, hidden]
// (state.slots), weighted and summed in slot order.
void combine_slots(Backend& backend, const MoeState& state, const model::ModelConfig& config, const float* rows,
                   const float* weights, float* out) {
  MoeCombineArgs combine;
  combine.expert_out = rows;
  combine.slot_rows = state.slots.data();
  combine.weights = weights;
  combine.tokens = state.tokens;
  combine.hidden = config.hidden_size;
  combine.top_k = config.moe.num_experts_per_tok;
  combine.expert_rows = state.tokens * combine.top_k;
  combine.out = out;
  backend.moe_combine(combine);
}

// One expert's backward over its rows [first, first + rows) of the grouped buffers.
void expert_backward(train::LayerPass& p, const MoeState& state, const train::ExpertGradPointers& grads,
                     const policy::CompiledExpert& expert, const policy::CompiledExpert& transposed, int64_t first,
                     int64_t rows) {
  MoeBackwardScratch& s = p.scratch.moe;
  const int64_t hidden = p.config.hidden_size, inter = p.config.moe.moe_intermediate_size;
  train::LayerPass rows_pass = p;  // the expert's pass runs over its rows only
  rows_pass.tokens = rows;
  const float* dout = s.dexpert_out.data() + first * hidden;  // [rows, hidden]
  const float* in = state.expert_in.data() + first * hidden;  // [rows, hidden]
  float* dact = s.dact.data() + first * inter;                // [rows, inter]
  float* dgate = s.dgate.data() + first * inter;              // [rows, inter]
  float* dup = s.dup.data() + first * inter;                  // [rows, inter]
  float* din = s.dexpert_in.data() + first * hidden;          // [rows, hidden]
  train::input_grad(rows_pass, transposed.linear(ExpertLinear::down), dout, dact, false);
  train::weight_grads(rows_pass, expert.linear(ExpertLinear::down), dout, state.act() + first * inter,
                      grads.linear(ExpertLinear::down));
  p.backend.swiglu_backward(state.gate.data() + first * inter, state.up.data() + first * inter, dact, rows * inter,
                            dgate, dup);
  train::weight_grads(rows_pass, expert.linear(ExpertLinear::gate), dgate, in, grads.linear(ExpertLinear::gate));
  train::weight_grads(rows_pass, expert.linear(ExpertLinear::up), dup, in, grads.linear(ExpertLinear::up));
  train::input_grad(rows_pass, transposed.linear(ExpertLinear::gate), dgate, din, false);
  train::input_grad(rows_pass, transposed.linear(ExpertLinear::up), dup, din, true);
}

}  // namespace

void moe_mlp_forward(Backend& backend, const LinearForward& linear, const policy::CompiledLayer& layer,
                     const model::ModelConfig& config, int64_t tokens, const float* normed, MoeState& state,
                     float* out) {
  state.tokens = tokens;
  state.replaying = state.replay != nullptr;
  if (tokens == 0) return;
  const int64_t hidden = config.hidden_size, inter = config.moe.moe_intermediate_size;
  const int64_t experts = config.moe.num_experts, k = config.moe.num_experts_per_tok;
  const size_t slots = as_size(tokens * k);
  if (state.replaying) {
    check_replay(state.replay, tokens, experts, k);
    state.replayed.upload(state.replay, slots);
  }

  MoeRouteArgs route;
  route.x = normed;
  route.router = layer.linear(model::Linear::router).f32.data();
  route.tokens = tokens;
  route.hidden = hidden;
  route.experts = experts;
  route.top_k = k;
  route.normalize = config.moe.norm_topk_prob;
  route.replayed = state.replaying ? state.replayed.data() : nullptr;
  route.logits = state.logits.data();
  route.chosen = state.chosen.data();
  route.weights = state.weights.data();
  backend.moe_route(route);

  // The grouping is host work over tokens * k indices: the row counts of the
  // expert GEMMs have to be known on the host anyway.
  state.chosen_host.resize(slots);
  state.chosen.download(state.chosen_host.data(), slots);
  if (state.replaying) {
    state.used_host.assign(state.replay, state.replay + slots);
  } else {
    state.used_host = state.chosen_host;
  }
  group_by_expert(state.used_host, experts, k, state);
  backend.gather_rows(normed, hidden, state.rows_of.data(), static_cast<int64_t>(slots), state.expert_in.data());

  for (int64_t e = 0; e < experts; ++e) {
    const int64_t first = state.first_row(e), rows = state.rows(e);
    if (rows == 0) continue;  // an expert no token chose runs nothing
    const policy::CompiledExpert& expert = layer.experts[as_size(e)];
    const float* in = state.expert_in.data() + first * hidden;  // [rows, hidden]
    float* gate = state.gate.data() + first * inter;            // [rows, moe_intermediate]
    float* up = state.up.data() + first * inter;                // [rows, moe_intermediate]
    float* act = state.act() + first * inter;                   // [rows, moe_intermediate]
    linear({{expert.linear(ExpertLinear::gate), gate}, {expert.linear(ExpertLinear::up), up}}, in, rows);
    backend.swiglu(gate, up, rows * inter, act);
    linear({{expert.linear(ExpertLinear::down), state.expert_out.data() + first * hidden}}, act, rows);
  }

  combine_slots(backend, state, config, state.expert_out.data(), state.weights.data(), out);
}

void moe_mlp_backward(train::LayerPass& p, const float* normed, const MoeState& state,
                      const train::LayerGradPointers& grads, const float* aux_grad, const float* dout,
                      float* dnormed) {
  const int64_t tokens = p.tokens, hidden = p.config.hidden_size;
  const int64_t experts = p.config.moe.num_experts, k = p.config.moe.num_experts_per_tok;
  require(state.tokens == tokens, "moe backward: the recorded pass has " + std::to_string(state.tokens) +
                                      " tokens, the backward " + std::to_string(tokens));
  if (tokens == 0) return;
  MoeBackwardScratch& s = p.scratch.moe;
  ensure_backward_scratch(p.backend, p.config, tokens, s);

  MoeCombineBackwardArgs combine;
  combine.dout = dout;
  combine.expert_out = state.expert_out.data();
  combine.slot_rows = state.slots.data();
  combine.weights = state.weights.data();
  combine.tokens = tokens;
  combine.hidden = hidden;
  combine.top_k = k;
  combine.expert_rows = tokens * k;
  combine.dexpert_out = s.dexpert_out.data();
  combine.dweights = s.dweights.data();
  p.backend.moe_combine_backward(combine);

  for (int64_t e = 0; e < experts; ++e) {
    if (state.rows(e) == 0) continue;
    expert_backward(p, state, grads.experts[as_size(e)], p.layer.experts[as_size(e)],
                    p.transposed.experts[as_size(e)], state.first_row(e), state.rows(e));
  }

  // dh = the k slots' input gradients summed in slot order: the combine with unit weights.
  combine_slots(p.backend, state, p.config, s.dexpert_in.data(), s.ones.data(), dnormed);

  MoeRouteBackwardArgs route;
  route.x = normed;
  route.router = p.layer.linear(model::Linear::router).f32.data();
  route.logits = state.logits.data();
  route.used = state.used();
  route.weights = state.weights.data();
  route.dweights = s.dweights.data();
  route.aux_grad = aux_grad;
  route.tokens = tokens;
  route.hidden = hidden;
  route.experts = experts;
  route.top_k = k;
  route.normalize = p.config.moe.norm_topk_prob;
  route.dlogits = s.dlogits.data();
  route.dx = dnormed;
  route.drouter = grads.linear(model::Linear::router).weight;
  p.backend.moe_route_backward(route);
}

}  // namespace fp8rl::blocks
