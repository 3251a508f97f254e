#include "core/model/fp8_checkpoint.h"

#include <algorithm>

#include "core/io/regular_file.h"
#include "core/model/layer_parts.h"
#include "kernels/common/quant_layout.h"
#include "kernels/error.h"

namespace fp8rl::model {
namespace {

// load_model_config's bounds on the same file.
constexpr size_t kMaxConfigBytes = size_t{1} << 20;
constexpr size_t kMaxConfigDepth = 32;

std::vector<std::string> dotted_parts(const std::string& name) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', begin)) {
    parts.push_back(name.substr(begin, dot - begin));
    begin = dot + 1;
  }
  parts.push_back(name.substr(begin));
  return parts;
}

bool is_number(const std::string& part) {
  return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool part_matches(const std::string& pattern, const std::string& part) {
  return pattern == part || (pattern == "*" && is_number(part));
}

[[noreturn]] void malformed(const std::string& path, const std::string& problem) {
  fail(Status::corrupt_data, path + ": quantization_config: " + problem);
}

[[noreturn]] void unsupported(const std::string& path, const std::string& problem) {
  fail(Status::unsupported, path + ": quantization_config: " + problem +
                                "; fp8rl reads block-wise FP8 checkpoints only (quant_method \"fp8\", fmt \"e4m3\", "
                                "activation_scheme \"dynamic\", weight_block_size [128, 128])");
}

// An optional string field that, when present, must equal `expected`.
void check_optional_string(const io::Json& quantization, const char* field, const char* expected,
                           const std::string& path) {
  const io::Json* value = quantization.find(field);
  if (value == nullptr) return;
  if (!value->is_string()) malformed(path, std::string("\"") + field + "\" is not a string");
  if (value->as_string() != expected) unsupported(path, std::string(field) + " \"" + value->as_string() + "\"");
}

void check_block_size(const io::Json& quantization, const std::string& path) {
  const io::Json* block = quantization.find("weight_block_size");
  if (block == nullptr || block->is_null()) unsupported(path, "no weight_block_size (per-tensor FP8)");
  if (!block->is_array() || block->elements().size() != 2 || !block->elements()[0].is_int64() ||
      !block->elements()[1].is_int64()) {
    malformed(path, "\"weight_block_size\" is not a pair of integers");
  }
  const int64_t rows = block->elements()[0].as_int64(), cols = block->elements()[1].as_int64();
  if (rows != kQuantBlock || cols != kQuantBlock) {
    unsupported(path, "weight_block_size [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
}

std::vector<std::string> read_excluded_modules(const io::Json& quantization, const std::string& path) {
  const io::Json* modules = quantization.find("modules_to_not_convert");
  if (modules == nullptr || modules->is_null()) return {};
  if (!modules->is_array()) malformed(path, "\"modules_to_not_convert\" is not a list");
  std::vector<std::string> names;
  for (const io::Json& module : modules->elements()) {
    if (!module.is_string() || module.as_string().empty()) {
      malformed(path, "\"modules_to_not_convert\" holds something other than a module name");
    }
    names.push_back(module.as_string());
  }
  return names;
}

}  // namespace

const std::string* Fp8QuantizationConfig::excluding_entry(const std::string& module) const {
  const std::vector<std::string> parts = dotted_parts(module);
  for (const std::string& entry : modules_to_not_convert) {
    const std::vector<std::string> pattern = dotted_parts(entry);
    for (size_t first = 0; first + pattern.size() <= parts.size(); ++first) {
      bool match = true;
      for (size_t i = 0; i < pattern.size() && match; ++i) match = part_matches(pattern[i], parts[first + i]);
      if (match) return &entry;
    }
  }
  return nullptr;
}

std::optional<Fp8QuantizationConfig> read_fp8_quantization_config(const std::string& path) {
  const io::Json config = io::parse_json(io::read_small_file(path, kMaxConfigBytes), path,
                                         io::JsonLimits{kMaxConfigBytes, kMaxConfigDepth});
  const io::Json* quantization = config.is_object() ? config.find("quantization_config") : nullptr;
  if (quantization == nullptr || quantization->is_null()) return std::nullopt;
  if (!quantization->is_object()) malformed(path, "not an object");
  const io::Json* method = quantization->find("quant_method");
  if (method == nullptr || !method->is_string()) malformed(path, "no \"quant_method\" string");
  if (method->as_string() != "fp8") unsupported(path, "quant_method \"" + method->as_string() + "\"");
  check_block_size(*quantization, path);
  check_optional_string(*quantization, "fmt", "e4m3", path);
  check_optional_string(*quantization, "activation_scheme", "dynamic", path);
  return Fp8QuantizationConfig{read_excluded_modules(*quantization, path)};
}

io::Json fp8_quantization_config_json() {
  return io::Json::object(
      {{"quant_method", io::Json::string("fp8")},
       {"fmt", io::Json::string("e4m3")},
       {"activation_scheme", io::Json::string("dynamic")},
       {"weight_block_size", io::Json::array({io::Json::integer(kQuantBlock), io::Json::integer(kQuantBlock)})}});
}

std::string scale_tensor_name(const std::string& weight_name) { return weight_name + "_scale_inv"; }

std::set<const HostTensor*> fp8_eligible_weights(const ModelParams& params) {
  std::set<const HostTensor*> weights;
  for (size_t i = 0; i < params.layers.size(); ++i) {
    const LayerParams& layer = params.layers[i];
    for (const LinearPart& part : kLinearParts) {
      if (part.fp8_eligible && present(part, params.config, static_cast<int64_t>(i)))
        weights.insert(&(layer.*part.weight));
    }
    for (const ExpertParams& expert : layer.experts) {
      for (const ExpertPart& part : kExpertParts) weights.insert(&(expert.*part.weight));
    }
  }
  return weights;
}

}  // namespace fp8rl::model
