// load_hf_checkpoint: config.json plus model.safetensors, or
// model.safetensors.index.json and the shards it names. Every file is opened
// and its header checked before anything the config claims is allocated;
// each tensor is then read with pread and converted to FP32 in chunks, so
// peak memory is the FP32 model plus one chunk, plus the E4M3 codes (a
// quarter of the masters) of an FP8 checkpoint.
#include "core/model/hf_checkpoint_load.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/folder_lock.h"
#include "core/io/json.h"
#include "core/io/regular_file.h"
#include "core/io/safetensors.h"
#include "core/model/fp8_checkpoint.h"
#include "core/model/half_codec.h"
#include "core/model/model_params.h"
#include "core/model/model_params_detail.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/error.h"

namespace fp8rl::model {
namespace {

namespace fs = std::filesystem;
using detail::shape_string;

// Real indexes are ~30 KiB for a 1B model and a few MiB for the largest.
constexpr size_t kMaxIndexBytes = size_t{64} << 20;

[[noreturn]] void corrupt(const std::string& where, const std::string& problem) {
  fail(Status::corrupt_data, where + ": " + problem);
}

// Where each tensor lives: shard file name (relative to the folder) per
// tensor name. A single-file model maps nothing and uses `single` instead.
struct WeightMap {
  std::string index_path;  // empty for a single-file model
  std::map<std::string, std::string, std::less<>> files;
};

// A shard name must stay inside the folder: a bare file name, no separators,
// not "." or "..". Hugging Face's own names are "model-00001-of-00002.safetensors".
void check_shard_name(const std::string& index_path, const std::string& tensor, const std::string& file) {
  const bool bad = file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos ||
                   file.find('\\') != std::string::npos || file.find('\0') != std::string::npos;
  if (bad) {
    corrupt(index_path, "weight_map entry for tensor '" + tensor + "' names file '" + file +
                            "', which is not a plain file name inside the model folder");
  }
}

WeightMap read_index(const fs::path& folder) {
  WeightMap map;
  map.index_path = (folder / detail::kIndexFile).string();
  // io_error for a missing or non-regular file, corrupt_data above the limit
  const std::string text = io::read_small_file(map.index_path, kMaxIndexBytes);
  const io::Json json = io::parse_json(text, map.index_path, io::JsonLimits{kMaxIndexBytes, 16});
  if (!json.is_object()) corrupt(map.index_path, "the index is not a JSON object");
  const io::Json* weight_map = json.find("weight_map");
  if (weight_map == nullptr) corrupt(map.index_path, "no \"weight_map\" object");
  if (!weight_map->is_object()) corrupt(map.index_path, "\"weight_map\" is not an object");
  for (const io::Json::Member& member : weight_map->items()) {
    if (!member.second.is_string()) {
      corrupt(map.index_path, "weight_map entry for tensor '" + member.first + "' is not a string");
    }
    const std::string& shard = member.second.as_string();
    check_shard_name(map.index_path, member.first, shard);
    map.files.emplace(member.first, shard);
  }
  // Every shard the index names must exist, as Hugging Face requires: an
  // index pointing at a missing file is a broken download or copy.
  std::map<std::string, std::string> first_tensor;  // shard -> a tensor it holds, for the message
  for (const auto& [tensor, shard] : map.files) first_tensor.emplace(shard, tensor);
  for (const auto& [shard, tensor] : first_tensor) {
    std::error_code error;
    // Follows symlinks (the Hub cache uses them); a FIFO or folder in its
    // place exists and is refused when opened.
    if (!fs::exists(folder / shard, error)) {
      corrupt(map.index_path, "shard '" + shard + "' (holding tensor '" + tensor +
                                  "' among others) does not exist in " + folder.string());
    }
  }
  return map;
}

// Every file that holds weights, opened (headers validated) up front, so
// that their tensor count and size can be checked against the config.
class Shards {
 public:
  Shards(const fs::path& folder, bool single, const WeightMap& map) {
    if (single) open(folder, detail::kSingleFile);
    for (const auto& entry : map.files) {
      if (readers_.count(entry.second) == 0) open(folder, entry.second);
    }
  }
  const io::SafetensorsReader& get(const std::string& file) const { return *readers_.at(file); }
  uint64_t tensor_count() const {
    uint64_t count = 0;
    for (const auto& entry : readers_) count += entry.second->tensors().size();
    return count;
  }
  uint64_t total_bytes() const {
    uint64_t bytes = 0;
    for (const auto& entry : readers_) bytes += entry.second->file_size();
    return bytes;
  }

 private:
  void open(const fs::path& folder, const std::string& file) {
    readers_.emplace(file, std::make_unique<io::SafetensorsReader>((folder / file).string()));
  }
  std::map<std::string, std::unique_ptr<io::SafetensorsReader>> readers_;
};

// Values decoded per pread: enough to amortize the call, small next to any weight.
constexpr size_t kChunkValues = size_t{1} << 16;

template <typename Decode>
void convert(const io::SafetensorsReader& reader, const io::SafetensorsTensor& stored, std::vector<float>& out,
             Decode decode) {
  std::vector<uint16_t> codes(std::min(kChunkValues, out.size()));  // little-endian file and host
  for (size_t first = 0; first < out.size(); first += codes.size()) {
    const size_t count = std::min(codes.size(), out.size() - first);
    reader.read(stored, first * sizeof(uint16_t), codes.data(), count * sizeof(uint16_t));
    for (size_t i = 0; i < count; ++i) out[first + i] = decode(codes[i]);
  }
}

// non_finite naming the file, tensor and element for NaN or infinity.
void check_finite(const std::string& where, const std::string& name, const HostTensor& tensor) {
  for (size_t i = 0; i < tensor.data.size(); ++i) {
    if (!std::isfinite(tensor.data[i])) {
      const size_t cols = tensor.shape.size() == 2 ? static_cast<size_t>(tensor.shape[1]) : 0;
      const std::string position =
          cols ? " (row " + std::to_string(i / cols) + ", column " + std::to_string(i % cols) + ")" : "";
      fail(Status::non_finite, where + ": tensor '" + name + "' element " + std::to_string(i) + position + " is " +
                                   (std::isnan(tensor.data[i]) ? "NaN" : "infinite"));
    }
  }
}

// Checks one stored tensor against the config and converts it to FP32.
void load_tensor(const io::SafetensorsReader& reader, const std::string& name, const std::vector<int64_t>& shape,
                 HostTensor& out) {
  const io::SafetensorsTensor& stored = *reader.find(name);
  const std::string where = reader.path();
  if (stored.dtype != io::DType::bf16 && stored.dtype != io::DType::f16 && stored.dtype != io::DType::f32) {
    corrupt(where, "tensor '" + name + "' has dtype " + std::string(io::dtype_name(stored.dtype)) +
                       "; model weights must be BF16, F16 or F32");
  }
  if (stored.shape != shape) {
    corrupt(where, "tensor '" + name + "' has shape " + shape_string(stored.shape) + ", but config.json calls for " +
                       shape_string(shape));
  }
  out.shape = shape;
  out.data.assign(stored.size_bytes / io::dtype_size(stored.dtype), 0.0f);
  switch (stored.dtype) {
    case io::DType::f32: reader.read(stored, 0, out.data.data(), stored.size_bytes); break;
    case io::DType::bf16: convert(reader, stored, out.data, [](uint16_t code) { return bf16_decode(code); }); break;
    default: convert(reader, stored, out.data, [](uint16_t code) { return half_decode(code); }); break;
  }
  check_finite(where, name, out);
}

// Where the folder stores each tensor: the single file, or the shard the index names.
class TensorLocator {
 public:
  TensorLocator(bool single, const WeightMap& map, const Shards& shards)
      : single_(single), map_(map), shards_(shards) {}

  // corrupt_data naming the file (or the index) when the tensor is missing.
  StoredTensor get(const std::string& name) const {
    const StoredTensor stored = find(name);
    if (stored.tensor != nullptr) return stored;
    if (single_) corrupt(shards_.get(detail::kSingleFile).path(), "tensor '" + name + "' is missing");
    corrupt(map_.index_path, "weight_map has no entry for tensor '" + name + "'");
  }

  // The tensor, or nulls when the folder has none of that name; corrupt_data
  // when the index places it in a shard that lacks it.
  StoredTensor find(const std::string& name) const {
    std::string file = detail::kSingleFile;
    if (!single_) {
      const auto found = map_.files.find(name);
      if (found == map_.files.end()) return {};
      file = found->second;
    }
    const io::SafetensorsReader& reader = shards_.get(file);
    const io::SafetensorsTensor* tensor = reader.find(name);
    if (tensor == nullptr && !single_) {
      corrupt(reader.path(), "tensor '" + name + "' is missing (the index places it in this shard)");
    }
    return tensor ? StoredTensor{&reader, tensor} : StoredTensor{};
  }

 private:
  bool single_;
  const WeightMap& map_;
  const Shards& shards_;
};

// A weight stored quantized must be one the checkpoint's quantization_config
// and the layer table allow: corrupt_data naming the file and tensor otherwise.
void check_may_be_quantized(const std::string& name, const StoredTensor& stored,
                            const std::optional<Fp8QuantizationConfig>& quantization, bool eligible,
                            const std::string& config_path) {
  const std::string what = stored.file->path() + ": tensor '" + name + "' is stored FP8-quantized, but ";
  if (!quantization) fail(Status::corrupt_data, what + config_path + " has no quantization_config");
  if (!eligible) {
    fail(Status::corrupt_data,
         what + "fp8rl keeps it unquantized whatever the recipe (only linear projections run in FP8)");
  }
  const std::string module = name.substr(0, name.rfind('.'));  // without ".weight"
  if (const std::string* entry = quantization->excluding_entry(module)) {
    fail(Status::corrupt_data, what + config_path + " lists it in modules_to_not_convert (entry \"" + *entry + "\")");
  }
}

}  // namespace

ModelParams load_hf_model(const std::string& folder_name) { return load_hf_checkpoint(folder_name).params; }

LoadedCheckpoint load_hf_checkpoint(const std::string& folder_name) {
  const fs::path folder(folder_name);
  std::error_code error;
  if (!fs::exists(folder, error)) fail(Status::io_error, folder_name + ": no such model folder");
  if (!fs::is_directory(folder, error)) fail(Status::io_error, folder_name + ": not a folder");
  const fs::path config_path = folder / detail::kConfigFile;
  if (!fs::exists(config_path, error)) {
    fail(Status::io_error, folder_name + ": no config.json (not a Hugging Face model folder)");
  }

  const io::FolderLock lock(folder_name, io::FolderLock::Mode::shared);  // no save mixes in meanwhile

  LoadedCheckpoint checkpoint;
  ModelParams& params = checkpoint.params;
  params.config = load_model_config(config_path.string());
  const std::optional<Fp8QuantizationConfig> quantization = read_fp8_quantization_config(config_path.string());
  // Hugging Face prefers the single file when both are present; so do we.
  const bool single = fs::exists(folder / detail::kSingleFile, error);
  if (!single && !fs::exists(folder / detail::kIndexFile, error)) {
    fail(Status::io_error, folder_name + ": neither " + detail::kSingleFile + " nor " + detail::kIndexFile + " found");
  }
  const WeightMap map = single ? WeightMap{} : read_index(folder);
  const Shards shards(folder, single, map);
  // 1 byte per weight at the least: an FP8 checkpoint's linear layers have that.
  check_files_can_hold(params.config, shards.tensor_count(), shards.total_bytes(), 1, folder_name);
  size_layers(params);
  const std::set<const HostTensor*> eligible = fp8_eligible_weights(params);
  const TensorLocator locator(single, map, shards);

  for_each_tensor(params, [&](const std::string& name, const std::vector<int64_t>& shape, HostTensor& tensor) {
    const StoredTensor stored = locator.get(name);
    const StoredTensor scales = locator.find(scale_tensor_name(name));
    if (scales.tensor == nullptr && stored.tensor->dtype != io::DType::f8_e4m3) {
      load_tensor(*stored.file, name, shape, tensor);
      return;
    }
    check_may_be_quantized(name, stored, quantization, eligible.count(&tensor) != 0, config_path.string());
    Fp8Weight weight = read_fp8_weight(name, shape, stored, scales);
    dequantize_fp8_weight(weight, shape, tensor);
    check_finite(stored.file->path(), name, tensor);  // a huge scale can overflow
    checkpoint.fp8_weights.emplace(name, std::move(weight));
  });
  return checkpoint;
}

}  // namespace fp8rl::model
