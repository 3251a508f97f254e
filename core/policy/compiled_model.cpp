#include "core/policy/compiled_model.h"

#include "core/policy/linear_sizes.h"

namespace fp8rl::policy {
namespace {

size_t size_of(const model::HostTensor& tensor) { return tensor.data.size(); }

// Where refit reads a tensor's FP32 masters: the host copy (uploaded, through
// `staging` for the tensors that are quantized) or device masters (read in
// place, copied on the device).
class MasterReader {
 public:
  MasterReader(Backend& backend, const DeviceMasters* device, DeviceArray<float>& staging)
      : backend_(backend), device_(device), staging_(staging) {}

  // out = the tensor's masters.
  void copy(const model::HostTensor& tensor, DeviceArray<float>& out) const {
    if (device_ != nullptr) return device_->copy_to(tensor, out.data());
    out.upload(tensor.data.data(), size_of(tensor));
  }

  // The tensor's masters in backend memory, valid until the next call.
  const float* view(const model::HostTensor& tensor) const {
    if (device_ != nullptr) return device_->view(tensor);
    staging_.reserve_discarding(backend_, size_of(tensor));
    staging_.upload(tensor.data.data(), size_of(tensor));
    return staging_.data();
  }

 private:
  Backend& backend_;
  const DeviceMasters* device_;
  DeviceArray<float>& staging_;
};

// Rounds the tensor's masters into `out`.
void refit_bf16(Backend& backend, const model::HostTensor& tensor, const MasterReader& masters,
                DeviceArray<uint16_t>& out) {
  backend.to_bf16(masters.view(tensor), static_cast<int64_t>(size_of(tensor)), out.data());
}

DeviceArray<float> allocate_like(Backend& backend, const model::HostTensor& tensor) {
  return DeviceArray<float>(backend, size_of(tensor));
}

// The arrays of a linear layer's compute copy, contents undefined.
LinearWeights allocate_linear(Backend& backend, int64_t out, int64_t in, bool has_bias, bool fp8) {
  LinearWeights linear;
  linear.out_features = out;
  linear.in_features = in;
  linear.fp8 = fp8;
  const LinearSizes sizes = linear_sizes(out, in, has_bias, fp8);
  linear.bf16 = DeviceArray<uint16_t>(backend, static_cast<size_t>(sizes.bf16));
  linear.codes = DeviceArray<uint8_t>(backend, static_cast<size_t>(sizes.codes));
  linear.scales = DeviceArray<float>(backend, static_cast<size_t>(sizes.scales));
  linear.bias = DeviceArray<float>(backend, static_cast<size_t>(sizes.bias));
  return linear;
}

// Requantizes (or rounds) a linear layer's compute copy in place from its FP32 master weights.
void refit_linear(Backend& backend, const model::HostTensor& weight, const model::HostTensor& bias,
                  ScaleFormat scale_format, const MasterReader& masters, LinearWeights& linear) {
  if (!bias.empty()) masters.copy(bias, linear.bias);
  if (!linear.fp8) return refit_bf16(backend, weight, masters, linear.bf16);
  QuantSpec spec;
  spec.layout = BlockLayout::block_128x128;
  spec.scale_format = scale_format;
  backend.quantize(masters.view(weight), DType::f32, linear.out_features, linear.in_features, spec, linear.codes.data(),
                   linear.scales.data());
}

}  // namespace

LinearWeights compile_linear(Backend& backend, const model::HostTensor& weight, const model::HostTensor& bias, bool fp8,
                             ScaleFormat scale_format) {
  LinearWeights linear = allocate_linear(backend, weight.rows(), weight.cols(), !bias.empty(), fp8);
  DeviceArray<float> staging;
  refit_linear(backend, weight, bias, scale_format, MasterReader(backend, nullptr, staging), linear);
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
    for (const model::NormPart& part : model::kNormParts) {
      DeviceArray<float>& norm = layer.norms[model::index(part.role)];
      norm = allocate_like(backend, source.*part.weight);
      weight_bytes_per_token_ += static_cast<int64_t>(norm.size() * 4);
    }
    for (const model::LinearPart& part : model::kLinearParts) {
      const model::HostTensor& weight = source.*part.weight;
      LinearWeights& linear = layer.linears[model::index(part.role)];
      const bool has_bias = model::has_bias(part, config), fp8 = runs_fp8(part, layer.precision);
      linear = allocate_linear(backend, weight.rows(), weight.cols(), has_bias, fp8);
      weight_bytes_per_token_ += linear_sizes(weight.rows(), weight.cols(), has_bias, fp8).bytes();
    }
    layers_.push_back(std::move(layer));
  }
  refit(params);
}

int64_t compute_weight_bytes(const model::ModelConfig& config, const Recipe& recipe) {
  const int64_t embeddings = config.vocab_size * config.hidden_size * 2;  // BF16
  int64_t total = embeddings * (config.tie_word_embeddings ? 1 : 2) + config.hidden_size * 4;  // + the final norm
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const LayerPrecision precision = layer_precision(recipe, i, config.num_layers);
    for (const model::NormPart& part : model::kNormParts)
      total += part.present(config) ? part.size(config) * 4 : 0;
    for (const model::LinearPart& part : model::kLinearParts)
      total += linear_sizes(part.out_features(config), part.in_features(config), model::has_bias(part, config),
                            runs_fp8(part, precision))
                   .bytes();
  }
  return total;
}

void CompiledModel::refit(const model::ModelParams& params, const DeviceMasters* device) {
  Backend& backend = backend_;
  const MasterReader masters(backend, device, staging_);
  refit_bf16(backend, params.embed_tokens, masters, embed_);
  if (!lm_head_.empty()) refit_bf16(backend, params.lm_head, masters, lm_head_);
  masters.copy(params.final_norm, final_norm_);
  const model::HostTensor none;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const model::LayerParams& source = params.layers[i];
    CompiledLayer& layer = layers_[i];
    for (const model::NormPart& part : model::kNormParts) {
      masters.copy(source.*part.weight, layer.norms[model::index(part.role)]);
    }
    for (const model::LinearPart& part : model::kLinearParts) {
      const model::HostTensor& bias = part.bias ? source.*part.bias : none;
      refit_linear(backend, source.*part.weight, bias, scale_format_, masters, layer.linears[model::index(part.role)]);
    }
  }
}

}  // namespace fp8rl::policy
