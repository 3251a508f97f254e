// save_hf_model: config.json and the weights as Hugging Face's
// save_pretrained lays them out, so transformers and this library read the
// folder back alike.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/io/json.h"
#include "core/io/safetensors.h"
#include "core/model/half_codec.h"
#include "core/model/hf_folder_writer.h"
#include "core/model/model_params.h"
#include "core/model/model_params_detail.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/error.h"

namespace fp8rl::model {
namespace {

struct Entry {
  std::string name;
  std::vector<int64_t> shape;
  const HostTensor* tensor = nullptr;
  size_t bytes = 0;
};

std::vector<Entry> list_tensors(const ModelParams& params, io::DType dtype) {
  std::vector<Entry> entries;
  // Read only: for_each_tensor hands out mutable tensors for loaders.
  for_each_tensor(const_cast<ModelParams&>(params),
                  [&](const std::string& name, const std::vector<int64_t>& shape, HostTensor& tensor) {
                    entries.push_back({name, shape, &tensor, tensor.data.size() * io::dtype_size(dtype)});
                  });
  return entries;
}

// Before anything is written: a weight that F16 cannot hold is an error, not
// a silent infinity.
void check_fits_f16(const std::vector<Entry>& entries) {
  for (const Entry& entry : entries) {
    const std::vector<float>& data = entry.tensor->data;
    for (size_t i = 0; i < data.size(); ++i) {
      if (std::isinf(half_decode(half_encode(data[i])))) {
        fail(Status::invalid_argument, "save_hf_model: " + entry.name + " element " + std::to_string(i) + " (" +
                                           std::to_string(data[i]) + ") overflows F16 (max 65504)");
      }
    }
  }
}

std::vector<uint8_t> encode(const std::vector<float>& data, io::DType dtype) {
  if (dtype == io::DType::f32) {
    std::vector<uint8_t> bytes(data.size() * 4);
    if (!data.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
    return bytes;
  }
  std::vector<uint8_t> bytes(data.size() * 2);
  for (size_t i = 0; i < data.size(); ++i) {
    const uint16_t code = dtype == io::DType::bf16 ? bf16_encode(data[i]) : half_encode(data[i]);
    std::memcpy(bytes.data() + 2 * i, &code, 2);  // little-endian host, as safetensors stores
  }
  return bytes;
}

}  // namespace

void save_hf_model(const std::string& folder_name, const ModelParams& params, io::DType dtype,
                   int64_t max_shard_bytes) {
  require(dtype == io::DType::f32 || dtype == io::DType::bf16 || dtype == io::DType::f16,
          "save_hf_model: dtype " + std::string(io::dtype_name(dtype)) + " is not supported; use F32, BF16 or F16");
  require(max_shard_bytes > 0, "save_hf_model: max_shard_bytes must be > 0, got " + std::to_string(max_shard_bytes));
  check_model_params(params);
  const std::vector<Entry> entries = list_tensors(params, dtype);
  if (dtype == io::DType::f16) check_fits_f16(entries);

  std::vector<detail::TensorToWrite> tensors;
  for (const Entry& entry : entries) {
    const HostTensor* tensor = entry.tensor;
    tensors.push_back(
        {entry.name, dtype, entry.shape, entry.bytes, [tensor, dtype] { return encode(tensor->data, dtype); }});
  }
  detail::write_hf_folder(folder_name, tensors, max_shard_bytes, model_config_to_json(params.config));
}

}  // namespace fp8rl::model
