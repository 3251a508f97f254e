#include "core/train/layer_backward.h"

#include <algorithm>

#include "core/blocks/dense_mlp.h"
#include "core/blocks/moe_mlp.h"
#include "core/train/layer_pass.h"

namespace fp8rl::train {
namespace {

using model::Linear;
using model::Norm;

size_t as_size(int64_t value) { return static_cast<size_t>(value); }

void ensure_scratch(Backend& backend, const model::ModelConfig& config, int64_t tokens, LayerBackwardScratch& s) {
  const size_t n = as_size(tokens);
  const size_t hidden = n * as_size(config.hidden_size), inter = n * as_size(config.intermediate_size);
  const size_t q = n * as_size(model::q_dim(config)), kv = n * as_size(model::kv_dim(config));
  for (auto [array, size] : {std::pair{&s.dnormed, hidden},
                             {&s.dpartial, hidden},
                             {&s.dattention, q},
                             {&s.dq, q},
                             {&s.dk, kv},
                             {&s.dv, kv},
                             {&s.dact, inter},
                             {&s.dgate, inter},
                             {&s.dup, inter}}) {
    array->reserve_discarding(backend, size);
  }
  int64_t largest = 0;  // elements of the largest weight (a router's gradient needs none)
  for (const model::LinearPart& part : model::kLinearParts) {
    if (part.role != Linear::router) largest = std::max(largest, part.out_features(config) * part.in_features(config));
  }
  if (model::sparse_layer_count(config) > 0) {
    for (const model::ExpertPart& part : model::kExpertParts)
      largest = std::max(largest, part.out_features(config) * part.in_features(config));
  }
  s.dweight.reserve_discarding(backend, as_size(largest));
  if (s.zero_ids.size() < n) {
    s.zero_ids.reserve_discarding(backend, n);
    backend.zero_fill(s.zero_ids.data(), n * sizeof(int32_t));
  }
}

// dresidual: dL/dx_out -> dL/dx_mid.
void mlp_block_backward(LayerPass& p, const policy::LayerActivations& saved, const LayerGradPointers& grads,
                        const float* aux_grad, float* dresidual) {
  LayerBackwardScratch& s = p.scratch;
  const int64_t hidden = p.config.hidden_size;
  if (saved.moe) {
    blocks::moe_mlp_backward(p, saved.mlp_normed, *saved.moe, grads, aux_grad, dresidual, s.dnormed.data());
  } else {
    blocks::dense_mlp_backward(p, saved, grads, dresidual, s.dnormed.data());
  }
  p.backend.rms_norm_backward(saved.mlp_input, p.layer.norm(Norm::post_attention).data(), s.dnormed.data(), p.tokens,
                              hidden, static_cast<float>(p.config.rms_norm_eps), s.dnormed.data(),
                              grads.norm(Norm::post_attention));
  p.backend.add(dresidual, s.dnormed.data(), p.tokens * hidden);
}

// dq, dk: dL/d(post-RoPE q, k) -> dL/d(q, k projections), through RoPE and the q/k norms.
void unrotate(LayerPass& p, const policy::LayerActivations& saved, const LayerGradPointers& grads) {
  LayerBackwardScratch& s = p.scratch;
  const model::ModelConfig& c = p.config;
  const policy::RopeTable& rope = p.rope;
  const int32_t* positions = p.indices.positions;
  p.backend.rope_backward(s.dq.data(), positions, p.tokens, c.num_attention_heads, c.head_dim, rope.cos(), rope.sin(),
                          rope.positions());
  p.backend.rope_backward(s.dk.data(), positions, p.tokens, c.num_key_value_heads, c.head_dim, rope.cos(), rope.sin(),
                          rope.positions());
  if (p.layer.norm(Norm::q).empty()) return;
  const float eps = static_cast<float>(c.rms_norm_eps);
  p.backend.rms_norm_backward(saved.q_raw, p.layer.norm(Norm::q).data(), s.dq.data(), p.tokens * c.num_attention_heads,
                              c.head_dim, eps, s.dq.data(), grads.norm(Norm::q));
  p.backend.rms_norm_backward(saved.k_raw, p.layer.norm(Norm::k).data(), s.dk.data(), p.tokens * c.num_key_value_heads,
                              c.head_dim, eps, s.dk.data(), grads.norm(Norm::k));
}

// dresidual: dL/dx_mid -> dL/dx_in.
void attention_block_backward(LayerPass& p, const policy::CompiledModel& model, size_t index,
                              const policy::AttentionScales& scales, const policy::KvCache& cache,
                              const policy::LayerActivations& saved, const LayerGradPointers& grads, float* dresidual) {
  LayerBackwardScratch& s = p.scratch;
  const int64_t hidden = p.config.hidden_size, kv_dim = model::kv_dim(p.config);
  input_grad(p, p.transposed.linear(Linear::o), dresidual, s.dattention.data(), false);  // [tokens, q_dim]
  weight_grads(p, p.layer.linear(Linear::o), dresidual, saved.attention, grads.linear(Linear::o));

  AttentionBackwardArgs args;
  args.forward = policy::attention_args(p.config, model.layers()[index], index, scales, p.indices, p.tokens, saved.q,
                                        cache, nullptr);
  args.dout = s.dattention.data();
  args.dq = s.dq.data();
  args.dk = s.dk.data();
  args.dv = s.dv.data();
  args.cache_row_count = p.tokens;
  p.backend.zero_fill(s.dk.data(), as_size(p.tokens * kv_dim) * sizeof(float));
  p.backend.zero_fill(s.dv.data(), as_size(p.tokens * kv_dim) * sizeof(float));
  p.backend.attention_backward(args);
  unrotate(p, saved, grads);

  weight_grads(p, p.layer.linear(Linear::q), s.dq.data(), saved.attention_normed, grads.linear(Linear::q));
  weight_grads(p, p.layer.linear(Linear::k), s.dk.data(), saved.attention_normed, grads.linear(Linear::k));
  weight_grads(p, p.layer.linear(Linear::v), s.dv.data(), saved.attention_normed, grads.linear(Linear::v));
  input_grad(p, p.transposed.linear(Linear::q), s.dq.data(), s.dnormed.data(), false);  // [tokens, hidden]
  input_grad(p, p.transposed.linear(Linear::k), s.dk.data(), s.dnormed.data(), true);
  input_grad(p, p.transposed.linear(Linear::v), s.dv.data(), s.dnormed.data(), true);
  p.backend.rms_norm_backward(saved.attention_input, p.layer.norm(Norm::input).data(), s.dnormed.data(), p.tokens,
                              hidden, static_cast<float>(p.config.rms_norm_eps), s.dnormed.data(),
                              grads.norm(Norm::input));
  p.backend.add(dresidual, s.dnormed.data(), p.tokens * hidden);
}

}  // namespace

// For y = x . W^T + b over the pass's tokens: dW += dy^T . x and db += column
// sums of dy. (A bias is an embedding row every token looks up, so its
// gradient is embedding_backward with every id 0.)
void weight_grads(LayerPass& p, const policy::LinearWeights& weights, const float* dy, const float* x,
                  const LinearGradPointers& grads) {
  const int64_t out = weights.out_features, in = weights.in_features;
  linear_wgrad(p.backend, weights.fp8, p.format, dy, x, p.tokens, out, in, p.scratch.dweight.data(), p.scratch.linear);
  p.backend.add(grads.weight, p.scratch.dweight.data(), out * in);
  if (grads.bias) p.backend.embedding_backward(dy, p.scratch.zero_ids.data(), p.tokens, 1, out, grads.bias);
}

// dx (+)= dy . W, with transposed = W^T; accumulate adds into dx instead of writing it.
void input_grad(LayerPass& p, const policy::LinearWeights& transposed, const float* dy, float* dx, bool accumulate) {
  if (!accumulate) return linear_dgrad(p.backend, transposed, p.format, dy, p.tokens, dx, p.scratch.linear);
  float* partial = p.scratch.dpartial.data();
  linear_dgrad(p.backend, transposed, p.format, dy, p.tokens, partial, p.scratch.linear);
  p.backend.add(dx, partial, p.tokens * transposed.out_features);
}

void layer_backward(Backend& backend, const model::ModelConfig& config, const policy::CompiledModel& model,
                    size_t index, const TransposedLayer& transposed, const policy::AttentionScales& scales,
                    const policy::KvCache& cache, const policy::RopeTable& rope, ForwardTape& tape,
                    const LayerGradPointers& grads, const float* aux_grad, float* dresidual,
                    LayerBackwardScratch& scratch) {
  const int64_t tokens = tape.tokens();
  ensure_scratch(backend, config, tokens, scratch);
  LayerPass pass{backend, config, model.layers()[index], transposed, model.scale_format(), tokens, tape.indices(),
                 rope,    scratch};
  const policy::LayerActivations saved = tape.layer(index);
  mlp_block_backward(pass, saved, grads, aux_grad, dresidual);
  attention_block_backward(pass, model, index, scales, cache, saved, grads, dresidual);
}

}  // namespace fp8rl::train
