#include "core/policy/fp8_export.h"

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/model/fp8_checkpoint.h"
#include "core/model/fp8_weight.h"
#include "core/model/hf_folder_writer.h"
#include "core/policy/compiled_model.h"
#include "core/policy/device_array.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {
namespace {

using model::detail::TensorToWrite;

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// On the policy's backend, with the same call its FP8 compute copies use.
model::Fp8Weight quantize_weight(Backend& backend, const model::HostTensor& weight, ScaleFormat scale_format) {
  QuantSpec spec;
  spec.layout = BlockLayout::block_128x128;
  spec.scale_format = scale_format;
  const ScaleShape shape = scale_shape(spec.layout, weight.rows(), weight.cols());
  DeviceArray<float> master(backend, weight.data.size());
  master.upload(weight.data.data(), weight.data.size());
  DeviceArray<uint8_t> codes(backend, weight.data.size());
  DeviceArray<float> scales(backend, static_cast<size_t>(shape.count()));
  backend.quantize(master.data(), DType::f32, weight.rows(), weight.cols(), spec, codes.data(), scales.data());
  model::Fp8Weight result{std::vector<uint8_t>(codes.size()), std::vector<float>(scales.size())};
  codes.download(result.codes.data(), result.codes.size());
  scales.download(result.scales.data(), result.scales.size());
  return result;
}

// An FP8 compute copy as it is on the backend.
model::Fp8Weight download_copy(Backend& backend, const ComputeCopy& copy) {
  model::Fp8Weight result{std::vector<uint8_t>(static_cast<size_t>(copy.rows * copy.cols)),
                          std::vector<float>(copy.scale_bytes_before(copy.rows) / sizeof(float))};
  backend.download(result.codes.data(), copy.values, result.codes.size());
  backend.download(result.scales.data(), copy.scales, result.scales.size() * sizeof(float));
  return result;
}

// Whether `quantized` dequantizes to the masters bit for bit: then it is
// them, and writing it loses nothing (a copy loaded from an FP8 checkpoint);
// a copy that lags the masters (trained, not yet recalibrated) is not.
bool holds_exactly(const model::Fp8Weight& quantized, const model::HostTensor& weight) {
  model::HostTensor values;
  model::dequantize_fp8_weight(quantized, weight.shape, values);
  return std::memcmp(values.data.data(), weight.data.data(), weight.data.size() * sizeof(float)) == 0;
}

// A weight's codes and scales, made once when its shard is written (the
// codes and the scales tensor may be asked for in either order): its FP8
// compute copy when that holds the masters exactly, else the masters quantized.
class LazyQuantized {
 public:
  LazyQuantized(Backend& backend, const model::HostTensor& weight, const ComputeCopy* fp8_copy,
                ScaleFormat scale_format)
      : backend_(backend), weight_(weight), scale_format_(scale_format) {
    if (fp8_copy != nullptr) copy_ = *fp8_copy;
  }

  const model::Fp8Weight& get() {
    if (done_) return result_;
    if (copy_.kind == ComputeCopy::Kind::fp8) result_ = download_copy(backend_, copy_);
    if (copy_.kind != ComputeCopy::Kind::fp8 || !holds_exactly(result_, weight_)) {
      result_ = quantize_weight(backend_, weight_, scale_format_);
    }
    done_ = true;
    return result_;
  }

 private:
  Backend& backend_;
  const model::HostTensor& weight_;
  ComputeCopy copy_;  // kind fp8 when the weight has an FP8 compute copy
  ScaleFormat scale_format_;
  model::Fp8Weight result_;
  bool done_ = false;
};

std::vector<uint8_t> bf16_bytes(const std::vector<float>& values) {
  std::vector<uint16_t> codes(values.size());
  for (size_t i = 0; i < values.size(); ++i) codes[i] = bf16_encode(values[i]);
  return as_bytes(codes);
}

io::Json quantized_config(const model::ModelConfig& config) {
  std::vector<io::Json::Member> members = model::model_config_to_json(config).items();
  members.emplace_back("quantization_config", model::fp8_quantization_config_json());
  return io::Json::object(std::move(members));
}

// The policy's FP8 compute copies by master tensor.
std::map<const model::HostTensor*, ComputeCopy> fp8_copies(Policy& policy) {
  std::map<const model::HostTensor*, ComputeCopy> copies;
  for (const ComputeCopy& copy : policy.compiled_for_refit().copies(policy.params())) {
    if (copy.kind == ComputeCopy::Kind::fp8) copies.emplace(copy.master, copy);
  }
  return copies;
}

}  // namespace

void export_fp8_checkpoint(Policy& policy, const std::string& folder, int64_t max_shard_bytes) {
  require(max_shard_bytes > 0, "export_fp8_checkpoint: max_shard_bytes must be > 0");
  Backend& backend = policy.context().backend();
  const ScaleFormat scale_format = policy.recipe().scale_format;
  std::vector<TensorToWrite> tensors;
  const model::ModelParams& params = policy.params();
  const std::set<const model::HostTensor*> quantized_weights = model::fp8_eligible_weights(params);
  const std::map<const model::HostTensor*, ComputeCopy> copies = fp8_copies(policy);
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
        const auto copy = copies.find(source);
        auto quantized = std::make_shared<LazyQuantized>(backend, tensor,
                                                         copy == copies.end() ? nullptr : &copy->second, scale_format);
        const ScaleShape blocks = scale_shape(BlockLayout::block_128x128, tensor.rows(), tensor.cols());
        tensors.push_back(
            {name, io::DType::f8_e4m3, shape, tensor.data.size(), [quantized] { return quantized->get().codes; }});
        tensors.push_back({model::scale_tensor_name(name),
                           io::DType::f32,
                           {blocks.rows, blocks.cols},
                           static_cast<size_t>(blocks.count()) * 4,
                           [quantized] { return as_bytes(quantized->get().scales); }});
      });
  model::detail::write_hf_folder(folder, tensors, max_shard_bytes, quantized_config(policy.config()));
}

}  // namespace fp8rl::policy
