#include "core/train/forward_tape.h"

namespace fp8rl::train {
namespace {

size_t as_size(int64_t value) { return static_cast<size_t>(value); }

}  // namespace

ForwardTape::ForwardTape(Backend& backend, const model::ModelConfig& config)
    : backend_(backend), config_(config), layers_(static_cast<size_t>(config.num_layers)) {}

void ForwardTape::begin(int64_t tokens, const policy::PassIndices& pass) {
  reserve(tokens);
  tokens_ = tokens;
  const size_t n = as_size(tokens);
  backend_.copy_within(ids_.data(), pass.ids, n * sizeof(int32_t));
  backend_.copy_within(positions_.data(), pass.positions, n * sizeof(int32_t));
  backend_.copy_within(key_count_.data(), pass.key_count, n * sizeof(int32_t));
  backend_.copy_within(key_begin_.data(), pass.key_begin, n * sizeof(int64_t));
  indices_ = policy::PassIndices{};
  indices_.ids = ids_.data();
  indices_.positions = positions_.data();
  indices_.key_count = key_count_.data();
  indices_.key_begin = key_begin_.data();
  indices_.max_key_count = pass.max_key_count;
}

void ForwardTape::reserve(int64_t tokens) {
  if (tokens <= capacity_) return;
  const size_t n = as_size(tokens);
  const size_t hidden = n * as_size(config_.hidden_size), inter = n * as_size(config_.intermediate_size);
  const size_t q = n * as_size(model::q_dim(config_)), kv = n * as_size(model::kv_dim(config_));
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerStore& layer = layers_[l];
    layer.attention_input = DeviceArray<float>(backend_, hidden);
    layer.attention_normed = DeviceArray<float>(backend_, hidden);
    layer.q = DeviceArray<float>(backend_, q);
    layer.k = DeviceArray<float>(backend_, kv);
    if (config_.qk_norm) {
      layer.q_raw = DeviceArray<float>(backend_, q);
      layer.k_raw = DeviceArray<float>(backend_, kv);
    }
    layer.v = DeviceArray<float>(backend_, kv);
    layer.attention = DeviceArray<float>(backend_, q);
    layer.mlp_input = DeviceArray<float>(backend_, hidden);
    layer.mlp_normed = DeviceArray<float>(backend_, hidden);
    if (model::is_sparse_layer(config_, static_cast<int64_t>(l))) continue;  // the runner sizes layer.moe
    layer.gate = DeviceArray<float>(backend_, inter);
    layer.up = DeviceArray<float>(backend_, inter);
    layer.act = DeviceArray<float>(backend_, inter);
  }
  final_residual_ = DeviceArray<float>(backend_, hidden);
  ids_ = DeviceArray<int32_t>(backend_, n);
  positions_ = DeviceArray<int32_t>(backend_, n);
  key_count_ = DeviceArray<int32_t>(backend_, n);
  key_begin_ = DeviceArray<int64_t>(backend_, n);
  capacity_ = tokens;
}

policy::LayerActivations ForwardTape::layer(size_t index) {
  LayerStore& s = layers_[index];
  policy::LayerActivations a;
  a.attention_input = s.attention_input.data();
  a.attention_normed = s.attention_normed.data();
  a.q = s.q.data();
  a.k = s.k.data();
  a.q_raw = config_.qk_norm ? s.q_raw.data() : a.q;
  a.k_raw = config_.qk_norm ? s.k_raw.data() : a.k;
  a.v = s.v.data();
  a.attention = s.attention.data();
  a.mlp_input = s.mlp_input.data();
  a.mlp_normed = s.mlp_normed.data();
  a.gate = s.gate.data();
  a.up = s.up.data();
  a.act = s.act.data();
  a.moe = moe(index);
  return a;
}

blocks::MoeState* ForwardTape::moe(size_t layer) {
  return model::is_sparse_layer(config_, static_cast<int64_t>(layer)) ? &layers_[layer].moe : nullptr;
}

}  // namespace fp8rl::train
