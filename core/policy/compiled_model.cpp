#include "core/policy/compiled_model.h"

#include "core/policy/linear_sizes.h"

namespace fp8rl::policy {
namespace {

size_t size_of(const model::HostTensor& tensor) { return tensor.data.size(); }

// Where refit reads a tensor's FP32 masters: the host copy (uploaded through
// `staging`) or device masters (read in place).
class MasterReader {
 public:
  MasterReader(Backend& backend, const DeviceMasters* device, DeviceArray<float>& staging)
      : backend_(backend), device_(device), staging_(staging) {}

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

// Rows [row_begin, row_end) of `copy` from its masters.
void refit_copy_rows(Backend& backend, const ComputeCopy& copy, const float* masters, ScaleFormat scale_format,
                     int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
  const int64_t first = row_begin * copy.cols, count = (row_end - row_begin) * copy.cols;
  const float* source = masters + first;
  switch (copy.kind) {
    case ComputeCopy::Kind::bf16:
      return backend.to_bf16(source, count, static_cast<uint16_t*>(copy.values) + first);
    case ComputeCopy::Kind::f32:
      return backend.copy_within(static_cast<float*>(copy.values) + first, source,
                                 static_cast<size_t>(count) * sizeof(float));
    case ComputeCopy::Kind::fp8: {
      QuantSpec spec;
      spec.layout = BlockLayout::block_128x128;
      spec.scale_format = scale_format;
      backend.quantize(source, DType::f32, row_end - row_begin, copy.cols, spec,
                       static_cast<uint8_t*>(copy.values) + first,
                       copy.scales + copy.scale_bytes_before(row_begin) / sizeof(float));
      return;
    }
  }
}

ComputeCopy copy_of(const model::HostTensor& master, ComputeCopy::Kind kind, void* values, float* scales = nullptr) {
  ComputeCopy copy;
  copy.master = &master;
  copy.kind = kind;
  copy.values = values;
  copy.scales = scales;
  copy.rows = master.shape.size() == 2 ? master.rows() : static_cast<int64_t>(size_of(master));
  copy.cols = master.shape.size() == 2 ? master.cols() : 1;
  return copy;
}

ComputeCopy linear_copy(const model::HostTensor& weight, LinearWeights& linear) {
  if (!linear.fp8) return copy_of(weight, ComputeCopy::Kind::bf16, linear.bf16.data());
  return copy_of(weight, ComputeCopy::Kind::fp8, linear.codes.data(), linear.scales.data());
}

}  // namespace

size_t ComputeCopy::value_bytes_per_row() const {
  const size_t element = kind == Kind::f32 ? sizeof(float) : kind == Kind::bf16 ? sizeof(uint16_t) : 1;
  return static_cast<size_t>(cols) * element;
}

size_t ComputeCopy::scale_bytes_before(int64_t row) const {
  if (kind != Kind::fp8) return 0;
  const ScaleShape shape = scale_shape(BlockLayout::block_128x128, rows, cols);
  return static_cast<size_t>((row + 127) / 128 * shape.cols) * sizeof(float);
}

LinearWeights compile_linear(Backend& backend, const model::HostTensor& weight, const model::HostTensor& bias, bool fp8,
                             ScaleFormat scale_format) {
  LinearWeights linear = allocate_linear(backend, weight.rows(), weight.cols(), !bias.empty(), fp8);
  DeviceArray<float> staging;
  const MasterReader masters(backend, nullptr, staging);
  refit_copy_rows(backend, linear_copy(weight, linear), masters.view(weight), scale_format, 0, weight.rows());
  if (!bias.empty()) {
    const ComputeCopy copy = copy_of(bias, ComputeCopy::Kind::f32, linear.bias.data());
    refit_copy_rows(backend, copy, masters.view(bias), scale_format, 0, copy.rows);
  }
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
  const MasterReader masters(backend_, device, staging_);
  for (const ComputeCopy& copy : copies(params))
    refit_copy_rows(backend_, copy, masters.view(*copy.master), scale_format_, 0, copy.rows);
}

void CompiledModel::refit_rows(const ComputeCopy& copy, const float* masters, int64_t row_begin, int64_t row_end) {
  refit_copy_rows(backend_, copy, masters, scale_format_, row_begin, row_end);
}

std::vector<ComputeCopy> CompiledModel::copies(const model::ModelParams& params) {
  using Kind = ComputeCopy::Kind;
  std::vector<ComputeCopy> out;
  out.push_back(copy_of(params.embed_tokens, Kind::bf16, embed_.data()));
  if (!lm_head_.empty()) out.push_back(copy_of(params.lm_head, Kind::bf16, lm_head_.data()));
  out.push_back(copy_of(params.final_norm, Kind::f32, final_norm_.data()));
  for (size_t i = 0; i < layers_.size(); ++i) {
    const model::LayerParams& source = params.layers[i];
    CompiledLayer& layer = layers_[i];
    for (const model::NormPart& part : model::kNormParts) {
      const model::HostTensor& norm = source.*part.weight;
      if (!norm.empty()) out.push_back(copy_of(norm, Kind::f32, layer.norms[model::index(part.role)].data()));
    }
    for (const model::LinearPart& part : model::kLinearParts) {
      LinearWeights& linear = layer.linears[model::index(part.role)];
      out.push_back(linear_copy(source.*part.weight, linear));
      if (part.bias != nullptr && !linear.bias.empty())
        out.push_back(copy_of(source.*part.bias, Kind::f32, linear.bias.data()));
    }
  }
  return out;
}

}  // namespace fp8rl::policy
