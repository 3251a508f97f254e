// The dense SwiGLU MLP of a layer, forward and backward side by side:
//
//   out = down(silu(gate(h)) * up(h))     h: the post-attention norm's output
//
// Its parameters are the layer table's gate, up and down projections
// (core/model/layer_parts.h). The layer forward (ModelRunner) and
// layer_backward call it around the post-attention norm and the residual
// add; the Mixture-of-Experts MLP of a sparse layer is moe_mlp.h beside this.
#pragma once

#include <cstdint>

#include "core/blocks/linear_forward.h"
#include "core/model/model_config.h"
#include "core/policy/compiled_model.h"
#include "core/policy/pass_recorder.h"
#include "core/train/layer_pass.h"

namespace fp8rl::blocks {

// out [tokens, hidden] = the MLP of a.mlp_normed; a.gate, a.up, a.act receive
// the intermediates [tokens, intermediate] (a.act may be a.gate).
void dense_mlp_forward(Backend& backend, const LinearForward& linear, const policy::CompiledLayer& layer,
                       const model::ModelConfig& config, int64_t tokens, const policy::LayerActivations& a, float* out);

// dnormed [tokens, hidden] = dL/dh from dout = dL/dout [tokens, hidden];
// the gate, up and down weight gradients are accumulated into grads.
void dense_mlp_backward(train::LayerPass& p, const policy::LayerActivations& saved,
                        const train::LayerGradPointers& grads, const float* dout, float* dnormed);

}  // namespace fp8rl::blocks
