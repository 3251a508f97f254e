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
LinearWeights allocate_linear(Backend& backend, int64_t out, int64_t in, bool has_bias, LinearMath math) {
  LinearWeights linear;
  linear.out_features = out;
  linear.in_features = in;
  linear.fp8 = math == LinearMath::fp8;
  const LinearSizes sizes = linear_sizes(out, in, has_bias, math);
  linear.bf16 = DeviceArray<uint16_t>(backend, static_cast<size_t>(sizes.bf16));
  linear.f32 = DeviceArray<float>(backend, static_cast<size_t>(sizes.f32));
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
    case ComputeCopy::Kind::bf16: return backend.to_bf16(source, count, static_cast<uint16_t*>(copy.values) + first);
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
  switch (linear.math()) {
    case LinearMath::bf16: return copy_of(weight, ComputeCopy::Kind::bf16, linear.bf16.data());
    case LinearMath::f32: return copy_of(weight, ComputeCopy::Kind::f32, linear.f32.data());
    case LinearMath::fp8: break;
  }
  return copy_of(weight, ComputeCopy::Kind::fp8, linear.codes.data(), linear.scales.data());
}

// A linear's compute copy, allocated for its master (absent: empty), and its
// bytes.
int64_t allocate_part(Backend& backend, const model::HostTensor& weight, bool has_bias, LinearMath math,
                      LinearWeights& linear) {
  if (weight.empty()) return 0;
  linear = allocate_linear(backend, weight.rows(), weight.cols(), has_bias, math);
  return linear_sizes(weight.rows(), weight.cols(), has_bias, math).bytes();
}

// The bytes of every linear compute copy of layer `layer` under `precision`.
int64_t linear_bytes(const model::ModelConfig& config, int64_t layer, const LayerPrecision& precision) {
  int64_t total = 0;
  for (const model::LinearPart& part : model::kLinearParts) {
    if (!model::present(part, config, layer)) continue;
    total += linear_sizes(part.out_features(config), part.in_features(config), model::has_bias(part, config),
                          linear_math(part, precision))
                 .bytes();
  }
  if (!model::is_sparse_layer(config, layer)) return total;
  for (const model::ExpertPart& part : model::kExpertParts)
    total +=
        config.moe.num_experts *
        linear_sizes(part.out_features(config), part.in_features(config), false, linear_math(true, precision)).bytes();
  return total;
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

LinearWeights compile_linear(Backend& backend, const model::HostTensor& weight, const model::HostTensor& bias,
                             LinearMath math, ScaleFormat scale_format) {
  LinearWeights linear = allocate_linear(backend, weight.rows(), weight.cols(), !bias.empty(), math);
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
  const LinearMath head = head_math(recipe);
  if (head_has_own_copy(config.tie_word_embeddings, recipe))
    head_ = allocate_linear(backend, config.vocab_size, config.hidden_size, false, head);
  final_norm_ = allocate_like(backend, params.final_norm);
  weight_bytes_per_token_ =
      linear_sizes(config.vocab_size, config.hidden_size, false, head).bytes() + config.hidden_size * 4;

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
      weight_bytes_per_token_ +=
          allocate_part(backend, source.*part.weight, model::has_bias(part, config), linear_math(part, layer.precision),
                        layer.linears[model::index(part.role)]);
    }
    layer.experts.resize(source.experts.size());
    for (size_t e = 0; e < source.experts.size(); ++e) {
      for (const model::ExpertPart& part : model::kExpertParts) {
        weight_bytes_per_token_ +=
            allocate_part(backend, source.experts[e].*part.weight, false, linear_math(true, layer.precision),
                          layer.experts[e].linears[model::index(part.role)]);
      }
    }
    layers_.push_back(std::move(layer));
  }
  refit(params);
}

int64_t compute_weight_bytes(const model::ModelConfig& config, const Recipe& recipe) {
  int64_t total = config.vocab_size * config.hidden_size * 2 + config.hidden_size * 4;  // BF16 embeddings, final norm
  if (head_has_own_copy(config.tie_word_embeddings, recipe))
    total += linear_sizes(config.vocab_size, config.hidden_size, false, head_math(recipe)).bytes();
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const LayerPrecision precision = layer_precision(recipe, i, config.num_layers);
    for (const model::NormPart& part : model::kNormParts) total += part.present(config) ? part.size(config) * 4 : 0;
    total += linear_bytes(config, i, precision);
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
  if (head_.out_features != 0)
    out.push_back(linear_copy(params.lm_head.empty() ? params.embed_tokens : params.lm_head, head_));
  out.push_back(copy_of(params.final_norm, Kind::f32, final_norm_.data()));
  for (size_t i = 0; i < layers_.size(); ++i) {
    const model::LayerParams& source = params.layers[i];
    CompiledLayer& layer = layers_[i];
    for (const model::NormPart& part : model::kNormParts) {
      const model::HostTensor& norm = source.*part.weight;
      if (!norm.empty()) out.push_back(copy_of(norm, Kind::f32, layer.norms[model::index(part.role)].data()));
    }
    for (const model::LinearPart& part : model::kLinearParts) {
      const model::HostTensor& weight = source.*part.weight;
      if (weight.empty()) continue;  // a part this layer does not have
      LinearWeights& linear = layer.linears[model::index(part.role)];
      out.push_back(linear_copy(weight, linear));
      if (part.bias != nullptr && !linear.bias.empty())
        out.push_back(copy_of(source.*part.bias, Kind::f32, linear.bias.data()));
    }
    for (size_t e = 0; e < layer.experts.size(); ++e) {
      for (const model::ExpertPart& part : model::kExpertParts)
        out.push_back(linear_copy(source.experts[e].*part.weight, layer.experts[e].linears[model::index(part.role)]));
    }
  }
  return out;
}

}  // namespace fp8rl::policy
