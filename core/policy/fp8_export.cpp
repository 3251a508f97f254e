#include "core/policy/fp8_export.h"

#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "core/model/hf_folder_writer.h"
#include "core/model/layer_parts.h"
#include "core/policy/device_array.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {
namespace {

using model::detail::TensorToWrite;

// The weights that an FP8 recipe runs in E4M3 (the layer table's FP8-eligible
// linear projections): exported as E4M3 codes with their block scales.
std::set<const model::HostTensor*> fp8_weights(const model::ModelParams& params) {
  std::set<const model::HostTensor*> weights;
  for (const model::LayerParams& layer : params.layers) {
    for (const model::LinearPart& part : model::kLinearParts) {
      if (part.fp8_eligible) weights.insert(&(layer.*part.weight));
    }
  }
  return weights;
}

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

struct QuantizedWeight {
  std::vector<uint8_t> codes;  // [rows, cols] E4M3
  std::vector<float> scales;   // [ceil(rows / 128), ceil(cols / 128)]
};

// On the policy's backend, with the same call its FP8 compute copies use.
QuantizedWeight quantize_weight(Backend& backend, const model::HostTensor& weight, ScaleFormat scale_format) {
  QuantSpec spec;
  spec.layout = BlockLayout::block_128x128;
  spec.scale_format = scale_format;
  const ScaleShape shape = scale_shape(spec.layout, weight.rows(), weight.cols());
  DeviceArray<float> master(backend, weight.data.size());
  master.upload(weight.data.data(), weight.data.size());
  DeviceArray<uint8_t> codes(backend, weight.data.size());
  DeviceArray<float> scales(backend, static_cast<size_t>(shape.rows * shape.cols));
  backend.quantize(master.data(), DType::f32, weight.rows(), weight.cols(), spec, codes.data(), scales.data());
  QuantizedWeight result{std::vector<uint8_t>(codes.size()), std::vector<float>(scales.size())};
  codes.download(result.codes.data(), result.codes.size());
  scales.download(result.scales.data(), result.scales.size());
  return result;
}

struct LazyQuantized {
  Backend* backend;
  const model::HostTensor* weight;
  ScaleFormat scale_format;
  QuantizedWeight result;
  bool done;

  const QuantizedWeight& get() {
    if (!done) result = quantize_weight(*backend, *weight, scale_format);
    done = true;
    return result;
  }
};

std::vector<uint8_t> bf16_bytes(const std::vector<float>& values) {
  std::vector<uint16_t> codes(values.size());
  for (size_t i = 0; i < values.size(); ++i) codes[i] = bf16_encode(values[i]);
  return as_bytes(codes);
}

io::Json quantized_config(const model::ModelConfig& config) {
  std::vector<io::Json::Member> members = model::model_config_to_json(config).items();
  members.emplace_back(
      "quantization_config",
      io::Json::object(
          {{"quant_method", io::Json::string("fp8")},
           {"fmt", io::Json::string("e4m3")},
           {"activation_scheme", io::Json::string("dynamic")},
           {"weight_block_size", io::Json::array({io::Json::integer(kQuantBlock), io::Json::integer(kQuantBlock)})}}));
  return io::Json::object(std::move(members));
}

}  // namespace

void export_fp8_checkpoint(Policy& policy, const std::string& folder, int64_t max_shard_bytes) {
  require(max_shard_bytes > 0, "export_fp8_checkpoint: max_shard_bytes must be > 0");
  Backend& backend = policy.context().backend();
  const ScaleFormat scale_format = policy.recipe().scale_format;
  std::vector<TensorToWrite> tensors;
  const model::ModelParams& params = policy.params();
  const std::set<const model::HostTensor*> quantized_weights = fp8_weights(params);
  // Read only: for_each_tensor hands out mutable tensors for loaders.
  model::for_each_tensor(
      const_cast<model::ModelParams&>(params),
      [&](const std::string& name, const std::vector<int64_t>& shape, model::HostTensor& tensor) {
        const model::HostTensor* source = &tensor;
        if (quantized_weights.count(source) == 0) {
          tensors.push_back(
              {name, io::DType::bf16, shape, tensor.data.size() * 2, [source] { return bf16_bytes(source->data); }});
          return;
        }
        // Quantized when its shard is written, once for the codes and the scales.
        auto quantized = std::make_shared<LazyQuantized>(LazyQuantized{&backend, source, scale_format, {}, false});
        const ScaleShape blocks = scale_shape(BlockLayout::block_128x128, tensor.rows(), tensor.cols());
        tensors.push_back(
            {name, io::DType::f8_e4m3, shape, tensor.data.size(), [quantized] { return quantized->get().codes; }});
        tensors.push_back({name + "_scale_inv",
                           io::DType::f32,
                           {blocks.rows, blocks.cols},
                           static_cast<size_t>(blocks.rows * blocks.cols) * 4,
                           [quantized] { return as_bytes(quantized->get().scales); }});
      });
  model::detail::write_hf_folder(folder, tensors, max_shard_bytes, quantized_config(policy.config()));
}

}  // namespace fp8rl::policy
