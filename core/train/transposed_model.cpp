#include "core/train/transposed_model.h"

#include "core/policy/linear_sizes.h"
#include "kernels/common/quant_layout.h"

namespace fp8rl::train {
namespace {

// W^T of a linear layer [out, in]: [in, out] in its precision, without the bias.
policy::LinearSizes transposed_sizes(int64_t out_features, int64_t in_features, policy::LinearMath math) {
  return policy::linear_sizes(in_features, out_features, /*has_bias=*/false, math);
}

}  // namespace

policy::LinearWeights allocate_transposed(Backend& backend, const policy::LinearWeights& forward) {
  policy::LinearWeights t;
  t.out_features = forward.in_features;
  t.in_features = forward.out_features;
  t.fp8 = forward.fp8;
  const policy::LinearSizes sizes = transposed_sizes(forward.out_features, forward.in_features, forward.math());
  t.bf16 = DeviceArray<uint16_t>(backend, static_cast<size_t>(sizes.bf16));
  t.f32 = DeviceArray<float>(backend, static_cast<size_t>(sizes.f32));
  t.codes = DeviceArray<uint8_t>(backend, static_cast<size_t>(sizes.codes));
  t.scales = DeviceArray<float>(backend, static_cast<size_t>(sizes.scales));
  return t;
}

void transpose_linear(Backend& backend, const policy::LinearWeights& forward, policy::LinearWeights& transposed) {
  const int64_t out = forward.out_features, in = forward.in_features;
  if (out == 0) return;  // a part the layer does not have
  if (forward.math() == policy::LinearMath::f32)
    return backend.transpose(forward.f32.data(), out, in, 4, transposed.f32.data());
  if (!forward.fp8) return backend.transpose(forward.bf16.data(), out, in, 2, transposed.bf16.data());
  const ScaleShape grid = scale_shape(BlockLayout::block_128x128, out, in);
  backend.transpose(forward.codes.data(), out, in, 1, transposed.codes.data());
  backend.transpose(forward.scales.data(), grid.rows, grid.cols, 4, transposed.scales.data());
}

TransposedModel::TransposedModel(Backend& backend, const policy::CompiledModel& model)
    : backend_(backend), vocab_(model.vocab_size()), hidden_(model.hidden_size()) {
  for (const policy::CompiledLayer& forward : model.layers()) {
    TransposedLayer layer;
    for (size_t i = 0; i < model::kLinearCount; ++i)
      layer.linears[i] = allocate_transposed(backend, forward.linears[i]);
    for (const policy::CompiledExpert& expert : forward.experts) {
      policy::CompiledExpert& t = layer.experts.emplace_back();
      for (size_t i = 0; i < model::kExpertLinearCount; ++i) t.linears[i] = allocate_transposed(backend, expert.linears[i]);
    }
    layers_.push_back(std::move(layer));
  }
  // A tied BF16 head has no LinearWeights of its own: shape one like it.
  policy::LinearWeights head_shape;
  head_shape.out_features = vocab_;
  head_shape.in_features = hidden_;
  head_shape.fp8 = model.head_fp8();
  head_ = allocate_transposed(backend, head_shape);
  refit(model);
}

void TransposedModel::refit(const policy::CompiledModel& model) {
  for (size_t l = 0; l < layers_.size(); ++l) {
    const policy::CompiledLayer& forward = model.layers()[l];
    for (size_t i = 0; i < model::kLinearCount; ++i)
      transpose_linear(backend_, forward.linears[i], layers_[l].linears[i]);
    for (size_t e = 0; e < forward.experts.size(); ++e) {
      for (size_t i = 0; i < model::kExpertLinearCount; ++i)
        transpose_linear(backend_, forward.experts[e].linears[i], layers_[l].experts[e].linears[i]);
    }
  }
  if (model.head_fp8()) return transpose_linear(backend_, model.head_weights(), head_);
  backend_.transpose(model.lm_head_bf16(), vocab_, hidden_, 2, head_.bf16.data());
}

int64_t TransposedModel::bytes() const {
  int64_t total = transposed_sizes(vocab_, hidden_, head_.math()).bytes();
  for (const TransposedLayer& layer : layers_) {
    for (const policy::LinearWeights& t : layer.linears)
      total += transposed_sizes(t.in_features, t.out_features, t.math()).bytes();
    for (const policy::CompiledExpert& expert : layer.experts) {
      for (const policy::LinearWeights& t : expert.linears)
        total += transposed_sizes(t.in_features, t.out_features, t.math()).bytes();
    }
  }
  return total;
}

int64_t transposed_weight_bytes(const model::ModelConfig& config, const policy::Recipe& recipe) {
  int64_t total = transposed_sizes(config.vocab_size, config.hidden_size, policy::head_math(recipe)).bytes();
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    const policy::LayerPrecision precision = policy::layer_precision(recipe, layer, config.num_layers);
    for (const model::LinearPart& part : model::kLinearParts) {
      if (!model::present(part, config, layer)) continue;
      total +=
          transposed_sizes(part.out_features(config), part.in_features(config), policy::linear_math(part, precision))
              .bytes();
    }
    if (!model::is_sparse_layer(config, layer)) continue;
    for (const model::ExpertPart& part : model::kExpertParts)
      total += config.moe.num_experts * transposed_sizes(part.out_features(config), part.in_features(config),
                                                         policy::linear_math(true, precision))
                                            .bytes();
  }
  return total;
}

}  // namespace fp8rl::train
