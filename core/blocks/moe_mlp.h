// The Mixture-of-Experts MLP of a sparse layer (Qwen3-MoE), forward:
//
//   logits = bf16(h) . router^T          FP32 under every recipe
//   p      = softmax(logits)             FP32
//   e[t,j] = the k most probable experts of token t, best first; ties: lower index
//            (routing replay: experts given by the caller instead)
//   w[t,j] = p[t, e[t,j]], divided by their sum when norm_topk_prob
//   out[t] = sum_j w[t,j] * expert_{e[t,j]}(h[t]),   expert(x) = down(silu(gate(x)) * up(x))
//
// and backward, with the choice e as a constant (it is piecewise constant):
//
//   dw[t,j]        = dout[t] . expert_out[t,j]
//   dexpert_out    = w[t,j] * dout[t]   -> each expert's down, SwiGLU, gate and up
//                                          backward over its rows (dgrad and
//                                          wgrad in the layer's recipe)
//   dlogits        = through the renormalised gates and the softmax, plus the
//                    load-balancing loss's dL/dp when given
//   dh             = sum_j dexpert_in[t,j] (slot order) + dlogits . router
//   drouter       += dlogits^T . bf16(h)   FP32
//
// Dropless (no capacity factor). The rows of all experts are gathered into
// one buffer grouped by expert, tokens ascending within an expert, and each
// expert runs its projections once over its rows, in the layer's recipe
// (E4M3 in the expert's own 128x128 blocks, or BF16). Every linear layer
// computes each row from that row alone and routing and combine are per
// token (kernels/common/moe_routing_math.h), so a token's output does not
// depend on which tokens share its batch or its experts: generation, scoring
// and the training forward route every token identically. An expert no
// token chose runs nothing and gets no gradient.
#pragma once

#include <cstdint>

#include "core/blocks/linear_forward.h"
#include "core/blocks/moe_state.h"
#include "core/model/model_config.h"
#include "core/policy/compiled_model.h"
#include "core/train/layer_pass.h"

namespace fp8rl::blocks {

// out [tokens, hidden] = the sparse layer's MLP of normed [tokens, hidden];
// state keeps the routing and the experts' intermediates (state.replay:
// the experts to use instead of the router's).
void moe_mlp_forward(Backend& backend, const LinearForward& linear, const policy::CompiledLayer& layer,
                     const model::ModelConfig& config, int64_t tokens, const float* normed, MoeState& state,
                     float* out);

// dnormed [tokens, hidden] = dL/dh from dout = dL/dout [tokens, hidden]
// over the pass `state` recorded, whose input was normed; the experts' and
// the router's weight gradients are accumulated into grads. aux_grad
// [experts] (backend memory, or null): dL/dp of the load-balancing loss,
// the same for every token.
void moe_mlp_backward(train::LayerPass& p, const float* normed, const MoeState& state,
                      const train::LayerGradPointers& grads, const float* aux_grad, const float* dout,
                      float* dnormed);

}  // namespace fp8rl::blocks
