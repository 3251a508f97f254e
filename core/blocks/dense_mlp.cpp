#include "core/blocks/dense_mlp.h"

namespace fp8rl::blocks {

using model::Linear;

void dense_mlp_forward(Backend& backend, const LinearForward& linear, const policy::CompiledLayer& layer,
                       const model::ModelConfig& config, int64_t tokens, const policy::LayerActivations& a,
                       float* out) {
  linear({{layer.linear(Linear::gate), a.gate}, {layer.linear(Linear::up), a.up}}, a.mlp_normed, tokens);
  backend.swiglu(a.gate, a.up, tokens * config.intermediate_size, a.act);
  linear({{layer.linear(Linear::down), out}}, a.act, tokens);
}

void dense_mlp_backward(train::LayerPass& p, const policy::LayerActivations& saved,
                        const train::LayerGradPointers& grads, const float* dout, float* dnormed) {
  train::LayerBackwardScratch& s = p.scratch;
  train::input_grad(p, p.transposed.linear(Linear::down), dout, s.dact.data(), false);  // [tokens, inter]
  train::weight_grads(p, p.layer.linear(Linear::down), dout, saved.act, grads.linear(Linear::down));
  p.backend.swiglu_backward(saved.gate, saved.up, s.dact.data(), p.tokens * p.config.intermediate_size, s.dgate.data(),
                            s.dup.data());
  train::weight_grads(p, p.layer.linear(Linear::gate), s.dgate.data(), saved.mlp_normed, grads.linear(Linear::gate));
  train::weight_grads(p, p.layer.linear(Linear::up), s.dup.data(), saved.mlp_normed, grads.linear(Linear::up));
  train::input_grad(p, p.transposed.linear(Linear::gate), s.dgate.data(), dnormed, false);  // [tokens, hidden]
  train::input_grad(p, p.transposed.linear(Linear::up), s.dup.data(), dnormed, true);
}

}  // namespace fp8rl::blocks
