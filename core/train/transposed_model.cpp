#include "core/train/transposed_model.h"

#include "kernels/common/quant_layout.h"

namespace fp8rl::train {
policy::LinearWeights allocate_transposed(Backend& backend, const policy::LinearWeights& forward) {
  policy::LinearWeights t;
  t.out_features = forward.in_features;
  t.in_features = forward.out_features;
  t.fp8 = forward.fp8;
  if (forward.fp8) {
    t.codes = DeviceArray<uint8_t>(backend, forward.codes.size());
    t.scales = DeviceArray<float>(backend, forward.scales.size());
  } else {
    t.bf16 = DeviceArray<uint16_t>(backend, forward.bf16.size());
  }
  return t;
}

void transpose_linear(Backend& backend, const policy::LinearWeights& forward, policy::LinearWeights& transposed) {
  const int64_t out = forward.out_features, in = forward.in_features;
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
    layers_.push_back(std::move(layer));
  }
  head_.out_features = hidden_;
  head_.in_features = vocab_;
  head_.bf16 = DeviceArray<uint16_t>(backend, static_cast<size_t>(vocab_ * hidden_));
  refit(model);
}

void TransposedModel::refit(const policy::CompiledModel& model) {
  for (size_t l = 0; l < layers_.size(); ++l) {
    const policy::CompiledLayer& forward = model.layers()[l];
    for (size_t i = 0; i < model::kLinearCount; ++i)
      transpose_linear(backend_, forward.linears[i], layers_[l].linears[i]);
  }
  backend_.transpose(model.lm_head(), vocab_, hidden_, 2, head_.bf16.data());
}

int64_t TransposedModel::bytes() const {
  size_t total = head_.bf16.size() * 2;
  for (const TransposedLayer& layer : layers_) {
    for (const policy::LinearWeights& l : layer.linears)
      total += l.bf16.size() * 2 + l.codes.size() + l.scales.size() * 4;
  }
  return static_cast<int64_t>(total);
}

}  // namespace fp8rl::train
