#include "core/policy/compiled_model.h"

#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {
namespace {

DeviceArray<float> upload_f32(Backend& backend, const model::HostTensor& tensor) {
  DeviceArray<float> array(backend, tensor.data.size());
  array.upload(tensor.data.data(), tensor.data.size());
  return array;
}

DeviceArray<uint16_t> upload_bf16(Backend& backend, const model::HostTensor& tensor) {
  const DeviceArray<float> master = upload_f32(backend, tensor);
  DeviceArray<uint16_t> array(backend, tensor.data.size());
  backend.to_bf16(master.data(), static_cast<int64_t>(master.size()), array.data());
  return array;
}

int64_t linear_bytes(const LinearWeights& linear) {
  const int64_t elements = linear.out_features * linear.in_features;
  const int64_t weights = linear.fp8 ? elements + static_cast<int64_t>(linear.scales.size() * 4) : elements * 2;
  return weights + static_cast<int64_t>(linear.bias.size() * 4);
}

}  // namespace

LinearWeights compile_linear(Backend& backend, const model::HostTensor& weight, const model::HostTensor& bias, bool fp8,
                             ScaleFormat scale_format) {
  LinearWeights linear;
  linear.out_features = weight.rows();
  linear.in_features = weight.cols();
  linear.fp8 = fp8;
  if (!bias.empty()) linear.bias = upload_f32(backend, bias);
  if (!fp8) {
    linear.bf16 = upload_bf16(backend, weight);
    return linear;
  }
  QuantSpec spec;
  spec.layout = BlockLayout::block_128x128;
  spec.scale_format = scale_format;
  const ScaleShape shape = scale_shape(spec.layout, linear.out_features, linear.in_features);
  const DeviceArray<float> master = upload_f32(backend, weight);
  linear.codes = DeviceArray<uint8_t>(backend, weight.data.size());
  linear.scales = DeviceArray<float>(backend, static_cast<size_t>(shape.rows * shape.cols));
  backend.quantize(master.data(), DType::f32, linear.out_features, linear.in_features, spec, linear.codes.data(),
                   linear.scales.data());
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

CompiledModel::CompiledModel(Backend& backend, const model::ModelParams& params, const Recipe& recipe) {
  const model::ModelConfig& config = params.config;
  const int64_t num_layers = config.num_layers;
  scale_format_ = recipe.scale_format;
  embed_ = upload_bf16(backend, params.embed_tokens);
  if (!config.tie_word_embeddings) lm_head_ = upload_bf16(backend, params.lm_head);
  final_norm_ = upload_f32(backend, params.final_norm);
  weight_bytes_per_token_ = config.vocab_size * config.hidden_size * 2 + config.hidden_size * 4;

  const model::HostTensor none;
  layers_.reserve(static_cast<size_t>(num_layers));
  for (int64_t i = 0; i < num_layers; ++i) {
    const model::LayerParams& source = params.layers[static_cast<size_t>(i)];
    CompiledLayer layer;
    layer.precision = layer_precision(recipe, i, num_layers);
    const bool fp8 = layer.precision.fp8_linear;
    const ScaleFormat scales = recipe.scale_format;
    layer.input_norm = upload_f32(backend, source.input_norm);
    layer.post_attention_norm = upload_f32(backend, source.post_attention_norm);
    if (!source.q_norm.empty()) layer.q_norm = upload_f32(backend, source.q_norm);
    if (!source.k_norm.empty()) layer.k_norm = upload_f32(backend, source.k_norm);
    layer.q = compile_linear(backend, source.q_proj, source.q_bias, fp8, scales);
    layer.k = compile_linear(backend, source.k_proj, source.k_bias, fp8, scales);
    layer.v = compile_linear(backend, source.v_proj, source.v_bias, fp8, scales);
    layer.o = compile_linear(backend, source.o_proj, source.o_bias, fp8, scales);
    layer.gate = compile_linear(backend, source.gate_proj, none, fp8, scales);
    layer.up = compile_linear(backend, source.up_proj, none, fp8, scales);
    layer.down = compile_linear(backend, source.down_proj, none, fp8, scales);
    for (const LinearWeights* linear : {&layer.q, &layer.k, &layer.v, &layer.o, &layer.gate, &layer.up, &layer.down}) {
      weight_bytes_per_token_ += linear_bytes(*linear);
    }
    weight_bytes_per_token_ += 2 * config.hidden_size * 4;
    layers_.push_back(std::move(layer));
  }
}

}  // namespace fp8rl::policy
