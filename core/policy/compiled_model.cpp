#include "core/policy/compiled_model.h"

#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {
namespace {

size_t size_of(const model::HostTensor& tensor) { return tensor.data.size(); }

// Uploads through `staging` (grown as needed) and rounds into `out`.
void refit_bf16(Backend& backend, const model::HostTensor& tensor, DeviceArray<float>& staging,
                DeviceArray<uint16_t>& out) {
  staging.reserve_discarding(backend, size_of(tensor));
  staging.upload(tensor.data.data(), size_of(tensor));
  backend.to_bf16(staging.data(), static_cast<int64_t>(size_of(tensor)), out.data());
}

DeviceArray<float> allocate_like(Backend& backend, const model::HostTensor& tensor) {
  return DeviceArray<float>(backend, size_of(tensor));
}

void upload(const model::HostTensor& tensor, DeviceArray<float>& out) {
  out.upload(tensor.data.data(), size_of(tensor));
}

int64_t linear_bytes(const LinearWeights& linear) {
  const int64_t elements = linear.out_features * linear.in_features;
  const int64_t weights = linear.fp8 ? elements + static_cast<int64_t>(linear.scales.size() * 4) : elements * 2;
  return weights + static_cast<int64_t>(linear.bias.size() * 4);
}

// The arrays of a linear layer's compute copy, contents undefined.
LinearWeights allocate_linear(Backend& backend, int64_t out, int64_t in, bool has_bias, bool fp8) {
  LinearWeights linear;
  linear.out_features = out;
  linear.in_features = in;
  linear.fp8 = fp8;
  const size_t elements = static_cast<size_t>(out * in);
  if (has_bias) linear.bias = DeviceArray<float>(backend, static_cast<size_t>(out));
  if (!fp8) {
    linear.bf16 = DeviceArray<uint16_t>(backend, elements);
    return linear;
  }
  const ScaleShape shape = scale_shape(BlockLayout::block_128x128, out, in);
  linear.codes = DeviceArray<uint8_t>(backend, elements);
  linear.scales = DeviceArray<float>(backend, static_cast<size_t>(shape.rows * shape.cols));
  return linear;
}

// Requantizes (or rounds) a linear layer's compute copy in place from its FP32 master weights.
void refit_linear(Backend& backend, const model::HostTensor& weight, const model::HostTensor& bias,
                  ScaleFormat scale_format, DeviceArray<float>& staging, LinearWeights& linear) {
  if (!bias.empty()) upload(bias, linear.bias);
  if (!linear.fp8) return refit_bf16(backend, weight, staging, linear.bf16);
  QuantSpec spec;
  spec.layout = BlockLayout::block_128x128;
  spec.scale_format = scale_format;
  staging.reserve_discarding(backend, size_of(weight));
  staging.upload(weight.data.data(), size_of(weight));
  backend.quantize(staging.data(), DType::f32, linear.out_features, linear.in_features, spec, linear.codes.data(),
                   linear.scales.data());
}

}  // namespace

LinearWeights compile_linear(Backend& backend, const model::HostTensor& weight, const model::HostTensor& bias, bool fp8,
                             ScaleFormat scale_format) {
  LinearWeights linear = allocate_linear(backend, weight.rows(), weight.cols(), !bias.empty(), fp8);
  DeviceArray<float> staging;
  refit_linear(backend, weight, bias, scale_format, staging, linear);
  return linear;
}

Fp8Matrix LinearWeights::fp8_matrix() const {
  Fp8Matrix matrix;
  matrix.codes = codes.data();
  matrix.scales = scales.data();
  matrix.rows = out_features;
  matrix.cols = in_features;
  matrix.layout = BlockLayout::block_128x128;
  return matrix;
}

CompiledModel::CompiledModel(Backend& backend, const model::ModelParams& params, const Recipe& recipe)
    : backend_(backend), vocab_size_(params.config.vocab_size), hidden_size_(params.config.hidden_size) {
  const model::ModelConfig& config = params.config;
  const int64_t num_layers = config.num_layers;
  scale_format_ = recipe.scale_format;
  embed_ = DeviceArray<uint16_t>(backend, size_of(params.embed_tokens));
  if (!config.tie_word_embeddings) lm_head_ = DeviceArray<uint16_t>(backend, size_of(params.lm_head));
  final_norm_ = allocate_like(backend, params.final_norm);
  weight_bytes_per_token_ = config.vocab_size * config.hidden_size * 2 + config.hidden_size * 4;

  layers_.reserve(static_cast<size_t>(num_layers));
  for (int64_t i = 0; i < num_layers; ++i) {
    const model::LayerParams& source = params.layers[static_cast<size_t>(i)];
    CompiledLayer layer;
    layer.precision = layer_precision(recipe, i, num_layers);
    const bool fp8 = layer.precision.fp8_linear;
    layer.input_norm = allocate_like(backend, source.input_norm);
    layer.post_attention_norm = allocate_like(backend, source.post_attention_norm);
    layer.q_norm = allocate_like(backend, source.q_norm);
    layer.k_norm = allocate_like(backend, source.k_norm);
    auto linear = [&](const model::HostTensor& weight, const model::HostTensor& bias) {
      return allocate_linear(backend, weight.rows(), weight.cols(), !bias.empty(), fp8);
    };
    const model::HostTensor none;
    layer.q = linear(source.q_proj, source.q_bias);
    layer.k = linear(source.k_proj, source.k_bias);
    layer.v = linear(source.v_proj, source.v_bias);
    layer.o = linear(source.o_proj, source.o_bias);
    layer.gate = linear(source.gate_proj, none);
    layer.up = linear(source.up_proj, none);
    layer.down = linear(source.down_proj, none);
    for (const LinearWeights* l : {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down}) {
      weight_bytes_per_token_ += linear_bytes(*l);
    }
    weight_bytes_per_token_ += 2 * config.hidden_size * 4;
    layers_.push_back(std::move(layer));
  }
  refit(params);
}

void CompiledModel::refit(const model::ModelParams& params) {
  Backend& backend = backend_;
  refit_bf16(backend, params.embed_tokens, staging_, embed_);
  if (!lm_head_.empty()) refit_bf16(backend, params.lm_head, staging_, lm_head_);
  upload(params.final_norm, final_norm_);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const model::LayerParams& source = params.layers[i];
    CompiledLayer& layer = layers_[i];
    upload(source.input_norm, layer.input_norm);
    upload(source.post_attention_norm, layer.post_attention_norm);
    upload(source.q_norm, layer.q_norm);
    upload(source.k_norm, layer.k_norm);
    refit_linear(backend, source.q_proj, source.q_bias, scale_format_, staging_, layer.q);
    refit_linear(backend, source.k_proj, source.k_bias, scale_format_, staging_, layer.k);
    refit_linear(backend, source.v_proj, source.v_bias, scale_format_, staging_, layer.v);
    refit_linear(backend, source.o_proj, source.o_bias, scale_format_, staging_, layer.o);
    refit_linear(backend, source.gate_proj, {}, scale_format_, staging_, layer.gate);
    refit_linear(backend, source.up_proj, {}, scale_format_, staging_, layer.up);
    refit_linear(backend, source.down_proj, {}, scale_format_, staging_, layer.down);
  }
}

}  // namespace fp8rl::policy
