// The backward pass of one transformer layer over a recorded forward pass
// (ModelRunner with a ForwardTape), the inverse order of
// ModelRunner::layer_forward:
//
//   MLP        x_out = x_mid + down(silu(gate(n2)) * up(n2)),  n2 = rms_norm(x_mid)
//   attention  x_mid = x_in + o(attention(rope(q(n1)), rope(k(n1)), v(n1))),  n1 = rms_norm(x_in)
//
// dresidual holds dL/dx_out on entry and dL/dx_in on exit. Every linear layer
// runs its dgrad and wgrad GEMMs in its forward precision (linear_grads.h);
// quantizers and roundings count as the identity (straight-through). Weight
// gradients are accumulated (+=) into the layer's gradient buffers.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/blocks/moe_state.h"

#include "core/model/layer_parts.h"
#include "core/model/model_config.h"
#include "core/policy/kv_cache.h"
#include "core/policy/model_runner.h"
#include "core/train/forward_tape.h"
#include "core/train/linear_grads.h"
#include "core/train/transposed_model.h"

namespace fp8rl::train {

struct LinearGradPointers {
  float* weight = nullptr;  // [out, in]
  float* bias = nullptr;    // [out]; null when the layer has none
};

// One expert's weight gradients, by model::ExpertLinear.
struct ExpertGradPointers {
  std::array<LinearGradPointers, model::kExpertLinearCount> linears{};

  const LinearGradPointers& linear(model::ExpertLinear role) const { return linears[model::index(role)]; }
};

// One layer's gradients, one per part of the layer table (core/model/layer_parts.h).
struct LayerGradPointers {
  std::array<LinearGradPointers, model::kLinearCount> linears{};  // by model::Linear
  std::array<float*, model::kNormCount> norms{};                  // by model::Norm [size]; null when absent
  std::vector<ExpertGradPointers> experts;                        // [num_experts] in a sparse layer, else empty

  const LinearGradPointers& linear(model::Linear role) const { return linears[model::index(role)]; }
  float* norm(model::Norm role) const { return norms[model::index(role)]; }
};

// Scratch of the backward pass, grown as needed, shared by all layers.
struct LayerBackwardScratch {
  DeviceArray<float> dnormed, dpartial;  // [tokens, hidden]
  DeviceArray<float> dattention, dq;     // [tokens, q_dim]
  DeviceArray<float> dk, dv;             // [tokens, kv_dim]
  DeviceArray<float> dact, dgate, dup;   // [tokens, intermediate] (the dense MLP's)
  DeviceArray<float> dweight;            // the largest layer weight
  DeviceArray<int32_t> zero_ids;         // [tokens] zeros: bias gradients as column sums
  LinearGradScratch linear;
  blocks::MoeBackwardScratch moe;
};

// One layer's backward over the pass that `tape` recorded, whose cache rows
// must be its tokens in order (token t in cache row t), so that dK and dV per
// cache row are per token. rope: the runner's tables (they cover the pass).
// aux_grad [experts] (backend memory, or null): the load-balancing loss's
// dL/dp for every token of a sparse layer.
void layer_backward(Backend& backend, const model::ModelConfig& config, const policy::CompiledModel& model,
                    size_t index, const TransposedLayer& transposed, const policy::AttentionScales& scales,
                    const policy::KvCache& cache, const policy::RopeTable& rope, ForwardTape& tape,
                    const LayerGradPointers& grads, const float* aux_grad, float* dresidual,
                    LayerBackwardScratch& scratch);

}  // namespace fp8rl::train
