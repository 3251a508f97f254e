#include "core/train/transposed_model.h"

#include "core/train/linear_grads.h"

namespace fp8rl::train {

TransposedModel::TransposedModel(Backend& backend, const model::ModelParams& params, const policy::Recipe& recipe) {
  const int64_t num_layers = params.config.num_layers;
  const ScaleFormat format = recipe.scale_format;
  for (int64_t i = 0; i < num_layers; ++i) {
    const model::LayerParams& p = params.layers[static_cast<size_t>(i)];
    const bool fp8 = policy::layer_precision(recipe, i, num_layers).fp8_linear;
    TransposedLayer layer;
    layer.q = transposed_linear(backend, p.q_proj, fp8, format);
    layer.k = transposed_linear(backend, p.k_proj, fp8, format);
    layer.v = transposed_linear(backend, p.v_proj, fp8, format);
    layer.o = transposed_linear(backend, p.o_proj, fp8, format);
    layer.gate = transposed_linear(backend, p.gate_proj, fp8, format);
    layer.up = transposed_linear(backend, p.up_proj, fp8, format);
    layer.down = transposed_linear(backend, p.down_proj, fp8, format);
    layers_.push_back(std::move(layer));
  }
  const model::HostTensor& head = params.lm_head.empty() ? params.embed_tokens : params.lm_head;
  head_ = transposed_linear(backend, head, false, format);
}

}  // namespace fp8rl::train
