// save_training_state / load_training_state: one safetensors file holding
// the master weights, the AdamW moments and the attention scales (F32), with
// the config, recipe, counters and RNG state as "__metadata__" strings.
//
// Save validates everything load would reject, so a run never writes a
// checkpoint it cannot resume from. Load trusts nothing: every metadata key
// is parsed strictly and every tensor of the file must be one it expects.
#include "core/train/training_state.h"

#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/finite_scan.h"
#include "core/io/atomic_file.h"
#include "core/io/json.h"
#include "core/io/safetensors.h"
#include "core/model/model_params_detail.h"
#include "kernels/error.h"

namespace fp8rl::train {
namespace {

using model::detail::shape_string;
using Metadata = std::map<std::string, std::string, std::less<>>;

constexpr const char* kFormat = "fp8rl.training_state";
// Version 2 added the recipe's "head"; version 1 files (without it) load
// with a BF16 head, the only head version 1 knew.
constexpr const char* kFormatVersion = "2";
constexpr const char* kFormatVersionWithoutHead = "1";
constexpr const char* kExpAvgPrefix = "optimizer.exp_avg.";
constexpr const char* kExpAvgSqPrefix = "optimizer.exp_avg_sq.";
// config.json texts are ~1 KiB; the limit only stops absurd headers early.
constexpr size_t kMaxConfigBytes = size_t{1} << 20;

// One model tensor with its Hugging Face name and the shape the config calls for.
struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  model::HostTensor* tensor;
};

std::vector<NamedTensor> named_tensors(model::ModelParams& params) {
  std::vector<NamedTensor> out;
  model::for_each_tensor(params,
                         [&](const std::string& name, const std::vector<int64_t>& shape, model::HostTensor& tensor) {
                           out.push_back({name, shape, &tensor});
                         });
  return out;
}

// The three scale arrays (const for the saver, mutable for the loader) with their tensor names.
template <typename Scales>
auto named_scales(Scales& scales) {
  using Values = decltype(&scales.q);
  return std::array<std::pair<const char*, Values>, 3>{
      {{"attention_scales.q", &scales.q}, {"attention_scales.k", &scales.k}, {"attention_scales.v", &scales.v}}};
}

const char* non_finite_word(float value) { return std::isnan(value) ? "NaN" : "infinite"; }

// The index of the first NaN or infinity, or -1 (the shared vectorized scan).
int64_t first_non_finite(const std::vector<float>& values) {
  return fp8rl::first_non_finite(values.data(), DType::f32, static_cast<int64_t>(values.size()));
}

// ---- recipe <-> JSON -------------------------------------------------------

const char* precision_name(policy::Precision precision) { return precision == policy::Precision::fp8 ? "fp8" : "bf16"; }

const char* scale_format_name(ScaleFormat format) { return format == ScaleFormat::pow2 ? "pow2" : "fp32"; }

std::string recipe_to_json(const policy::Recipe& recipe) {
  using io::Json;
  return io::write_json(Json::object({
      {"linear", Json::string(precision_name(recipe.linear))},
      {"scale_format", Json::string(scale_format_name(recipe.scale_format))},
      {"kv_cache", Json::string(precision_name(recipe.kv_cache))},
      {"attention", Json::string(precision_name(recipe.attention))},
      {"bf16_first_layers", Json::integer(recipe.bf16_first_layers)},
      {"bf16_last_layers", Json::integer(recipe.bf16_last_layers)},
      {"head", Json::string(precision_name(recipe.head))},
  }));
}

// Reads the recipe object strictly: every key present, no unknown key (a
// newer writer with more recipe fields must bump the format version rather
// than have its fields silently dropped).
class RecipeParser {
 public:
  RecipeParser(const io::Json& json, std::string where, bool has_head) : json_(json), where_(std::move(where)) {
    if (!json_.is_object()) corrupt("expected a JSON object, got " + std::string(io::json_type_name(json_.type())));
    std::set<std::string> keys = {"linear",    "scale_format",      "kv_cache",
                                  "attention", "bf16_first_layers", "bf16_last_layers"};
    if (has_head) keys.insert("head");
    for (const io::Json::Member& member : json_.items()) {
      if (keys.count(member.first) == 0) corrupt("unknown key \"" + member.first + "\"");
    }
  }

  policy::Precision precision(const char* key) const {
    const std::string& text = string(key);
    if (text == "bf16") return policy::Precision::bf16;
    if (text == "fp8") return policy::Precision::fp8;
    corrupt("key \"" + std::string(key) + "\": expected \"bf16\" or \"fp8\", got \"" + text + "\"");
  }

  ScaleFormat scale_format(const char* key) const {
    const std::string& text = string(key);
    if (text == "fp32") return ScaleFormat::fp32;
    if (text == "pow2") return ScaleFormat::pow2;
    corrupt("key \"" + std::string(key) + "\": expected \"fp32\" or \"pow2\", got \"" + text + "\"");
  }

  int32_t layer_count(const char* key) const {
    const io::Json& value = at(key);
    if (!value.is_int64() || value.as_int64() < 0 || value.as_int64() > std::numeric_limits<int32_t>::max()) {
      corrupt("key \"" + std::string(key) + "\": expected an integer in [0, 2^31)");
    }
    return static_cast<int32_t>(value.as_int64());
  }

  [[noreturn]] void corrupt(const std::string& problem) const { fail(Status::corrupt_data, where_ + ": " + problem); }

 private:
  const io::Json& at(const char* key) const {
    const io::Json* value = json_.find(key);
    if (value == nullptr) corrupt("missing key \"" + std::string(key) + "\"");
    return *value;
  }
  const std::string& string(const char* key) const {
    const io::Json& value = at(key);
    if (!value.is_string()) corrupt("key \"" + std::string(key) + "\": expected a string");
    return value.as_string();
  }

  const io::Json& json_;
  std::string where_;
};

policy::Recipe parse_recipe(std::string_view text, const std::string& where, bool has_head) {
  const io::Json json = io::parse_json(text, where, io::JsonLimits{kMaxConfigBytes, 8});
  const RecipeParser parser(json, where, has_head);
  policy::Recipe recipe;
  recipe.linear = parser.precision("linear");
  recipe.scale_format = parser.scale_format("scale_format");
  recipe.kv_cache = parser.precision("kv_cache");
  recipe.attention = parser.precision("attention");
  recipe.bf16_first_layers = parser.layer_count("bf16_first_layers");
  recipe.bf16_last_layers = parser.layer_count("bf16_last_layers");
  if (has_head) recipe.head = parser.precision("head");
  try {
    policy::validate_recipe(recipe);  // e.g. FP8 attention over a BF16 KV cache
  } catch (const Error& error) {
    parser.corrupt(error.what());
  }
  return recipe;
}

// ---- counters ----------------------------------------------------------------

// A whole string of decimal digits no greater than max: no sign, no spaces,
// nothing after the digits, so a damaged value can never be read as another.
bool parse_decimal(std::string_view text, uint64_t max, uint64_t& value) {
  if (text.empty()) return false;
  value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (max - digit) / 10) return false;
    value = value * 10 + digit;
  }
  return true;
}

// ---- save --------------------------------------------------------------------

void check_moments(const std::string& where, const char* which, const std::vector<std::vector<float>>& moments,
                   const std::vector<NamedTensor>& tensors) {
  if (moments.empty()) return;
  require(moments.size() == tensors.size(), where + ": " + which + " holds " + std::to_string(moments.size()) +
                                                " arrays, the model has " + std::to_string(tensors.size()) +
                                                " tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    require(moments[i].size() == tensors[i].tensor->data.size(),
            where + ": " + which + " of " + tensors[i].name + " holds " + std::to_string(moments[i].size()) +
                " values, the tensor " + std::to_string(tensors[i].tensor->data.size()));
    const int64_t bad = first_non_finite(moments[i]);
    if (bad >= 0) {
      fail(Status::non_finite, where + ": " + which + " of " + tensors[i].name + " element " + std::to_string(bad) +
                                   " is " + non_finite_word(moments[i][static_cast<size_t>(bad)]));
    }
  }
}

void check_scales(const std::string& where, const policy::AttentionScales& scales, int64_t num_layers) {
  for (const auto& [name, values] : named_scales(scales)) {
    require(values->size() == static_cast<size_t>(num_layers),
            where + ": " + name + " holds " + std::to_string(values->size()) + " values, one per layer needs " +
                std::to_string(num_layers));
    for (size_t layer = 0; layer < values->size(); ++layer) {
      const float value = (*values)[layer];
      if (!std::isfinite(value)) {
        fail(Status::non_finite,
             where + ": " + name + " of layer " + std::to_string(layer) + " is " + non_finite_word(value));
      }
      require(value > 0.0f, where + ": " + name + " of layer " + std::to_string(layer) + " is " +
                                std::to_string(value) + ", scales must be > 0");
    }
  }
}

// Everything load_training_state checks, so that a saved file always loads.
void check_state(const std::string& where, const TrainingState& state, const std::vector<NamedTensor>& tensors) {
  model::check_model_params(state.params);
  policy::validate_recipe(state.recipe);
  require(state.exp_avg.empty() == state.exp_avg_sq.empty(),
          where + ": exp_avg and exp_avg_sq must be both empty (before the first step) or both full");
  check_moments(where, "exp_avg", state.exp_avg, tensors);
  check_moments(where, "exp_avg_sq", state.exp_avg_sq, tensors);
  check_scales(where, state.scales, state.params.config.num_layers);
  require(state.steps >= 0 && state.optimizer_steps >= 0,
          where + ": steps (" + std::to_string(state.steps) + ") and optimizer_steps (" +
              std::to_string(state.optimizer_steps) + ") must not be negative");
}

io::SafetensorsTensorData f32_tensor(std::string name, const std::vector<int64_t>& shape,
                                     const std::vector<float>& values) {
  return {std::move(name), io::DType::f32, shape, values.data(), values.size() * sizeof(float)};
}

Metadata state_metadata(const TrainingState& state) {
  return {
      {"format", kFormat},
      {"format_version", kFormatVersion},
      {"config", io::write_json(model::model_config_to_json(state.params.config))},
      {"recipe", recipe_to_json(state.recipe)},
      {"steps", std::to_string(state.steps)},
      {"optimizer_steps", std::to_string(state.optimizer_steps)},
      {"rng_seed", std::to_string(state.rng_seed)},
      {"rng_counter", std::to_string(state.rng_counter)},
  };
}

// ---- load --------------------------------------------------------------------

// The reader of one checkpoint: every error names the file, and it tracks
// which tensors were consumed so that unexpected ones can be reported.
class StateFile {
 public:
  explicit StateFile(const std::string& path) : reader_(path) {}

  const std::string& path() const { return reader_.path(); }

  [[noreturn]] void corrupt(const std::string& problem) const { fail(Status::corrupt_data, path() + ": " + problem); }

  const std::string& metadata(const char* key) const {
    const auto found = reader_.metadata().find(key);
    if (found == reader_.metadata().end()) corrupt("missing metadata key \"" + std::string(key) + "\"");
    return found->second;
  }

  uint64_t counter(const char* key, uint64_t max) const {
    const std::string& text = metadata(key);
    uint64_t value = 0;
    if (!parse_decimal(text, max, value)) {
      corrupt("metadata \"" + std::string(key) + "\" is \"" + text + "\", expected a decimal integer in [0, " +
              std::to_string(max) + "]");
    }
    return value;
  }

  bool has(const std::string& name) const { return reader_.find(name) != nullptr; }

  // Before the weights the config claims are allocated: F32, 4 bytes each.
  void check_can_hold(const model::ModelConfig& config) const {
    model::check_files_can_hold(config, reader_.tensors().size(), reader_.file_size(), sizeof(float), path());
  }

  // Copies a stored F32 tensor of exactly `shape` into out, rejecting NaN and infinity.
  void read_f32(const std::string& name, const std::vector<int64_t>& shape, std::vector<float>& out) {
    const io::SafetensorsTensor* stored = reader_.find(name);
    if (stored == nullptr) corrupt("missing tensor '" + name + "'");
    if (stored->dtype != io::DType::f32) {
      corrupt("tensor '" + name + "' has dtype " + std::string(io::dtype_name(stored->dtype)) + ", expected F32");
    }
    if (stored->shape != shape) {
      corrupt("tensor '" + name + "' has shape " + shape_string(stored->shape) + ", expected " + shape_string(shape));
    }
    out.resize(stored->size_bytes / sizeof(float));
    reader_.read(*stored, 0, out.data(), stored->size_bytes);
    const int64_t bad = first_non_finite(out);
    if (bad >= 0) {
      fail(Status::non_finite, path() + ": tensor '" + name + "' element " + std::to_string(bad) + " is " +
                                   non_finite_word(out[static_cast<size_t>(bad)]));
    }
    consumed_.insert(name);
  }

  // A tensor no part of the state claims means the file and its config
  // disagree (lm_head of a tied model, say): refuse rather than drop it.
  void check_all_consumed() const {
    if (consumed_.size() == reader_.tensors().size()) return;
    for (const io::SafetensorsTensor& tensor : reader_.tensors()) {
      if (consumed_.count(tensor.name) == 0) corrupt("unexpected tensor '" + tensor.name + "'");
    }
  }

 private:
  io::SafetensorsReader reader_;
  std::set<std::string> consumed_;
};

// Whether the file's recipe has a "head" (format version 2) or not (1).
bool check_format(const StateFile& file) {
  const std::string& format = file.metadata("format");
  if (format != kFormat) file.corrupt("metadata \"format\" is \"" + format + "\", expected \"" + kFormat + "\"");
  const std::string& version = file.metadata("format_version");
  if (version != kFormatVersion && version != kFormatVersionWithoutHead) {
    file.corrupt("unknown metadata \"format_version\" \"" + version + "\" (this library reads versions " +
                 kFormatVersionWithoutHead + " and " + kFormatVersion + ")");
  }
  return version == kFormatVersion;
}

model::ModelConfig read_config(const StateFile& file) {
  const std::string where = file.path() + ": metadata \"config\"";
  const io::Json json = io::parse_json(file.metadata("config"), where, io::JsonLimits{kMaxConfigBytes, 32});
  return model::parse_model_config(json, where);  // corrupt_data naming the key, unsupported for unknown models
}

void read_counters(const StateFile& file, TrainingState& state) {
  constexpr uint64_t kMaxInt64 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  constexpr uint64_t kMaxUint64 = std::numeric_limits<uint64_t>::max();
  state.steps = static_cast<int64_t>(file.counter("steps", kMaxInt64));
  state.optimizer_steps = static_cast<int64_t>(file.counter("optimizer_steps", kMaxInt64));
  state.rng_seed = file.counter("rng_seed", kMaxUint64);
  state.rng_counter = file.counter("rng_counter", kMaxUint64);
}

void read_weights(StateFile& file, model::ModelParams& params) {
  model::size_layers(params);
  for (const NamedTensor& entry : named_tensors(params)) {
    file.read_f32(entry.name, entry.shape, entry.tensor->data);
    entry.tensor->shape = entry.shape;
  }
}

// All 2 x N moment tensors, or none of them (a state saved before the first step).
void read_moments(StateFile& file, const std::vector<NamedTensor>& tensors, TrainingState& state) {
  size_t present = 0;
  std::string missing;
  for (const NamedTensor& entry : tensors) {
    for (const char* prefix : {kExpAvgPrefix, kExpAvgSqPrefix}) {
      if (file.has(prefix + entry.name)) {
        ++present;
      } else if (missing.empty()) {
        missing = prefix + entry.name;
      }
    }
  }
  if (present == 0) return;
  if (present != 2 * tensors.size()) {
    file.corrupt("partial optimizer state: " + std::to_string(present) + " of " + std::to_string(2 * tensors.size()) +
                 " moment tensors present, '" + missing + "' is missing");
  }
  state.exp_avg.resize(tensors.size());
  state.exp_avg_sq.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    file.read_f32(kExpAvgPrefix + tensors[i].name, tensors[i].shape, state.exp_avg[i]);
    file.read_f32(kExpAvgSqPrefix + tensors[i].name, tensors[i].shape, state.exp_avg_sq[i]);
  }
}

void read_scales(StateFile& file, int64_t num_layers, policy::AttentionScales& scales) {
  for (const auto& [name, values] : named_scales(scales)) {
    // A wrong shape here is a wrong number of scales: corrupt_data from read_f32.
    file.read_f32(name, {num_layers}, *values);
    for (size_t layer = 0; layer < values->size(); ++layer) {
      require((*values)[layer] > 0.0f, file.path() + ": tensor '" + name + "' layer " + std::to_string(layer) + " is " +
                                           std::to_string((*values)[layer]) + ", scales must be > 0");
    }
  }
}

}  // namespace

void save_training_state(const std::string& path, const TrainingState& state) {
  const std::string where = "save_training_state: " + path;
  // for_each_tensor hands out mutable tensors for loaders; saving only reads them.
  const std::vector<NamedTensor> tensors = named_tensors(const_cast<model::ModelParams&>(state.params));
  check_state(where, state, tensors);

  std::vector<io::SafetensorsTensorData> stored;
  stored.reserve(3 * tensors.size() + 3);
  for (size_t i = 0; i < tensors.size(); ++i) {
    stored.push_back(f32_tensor(tensors[i].name, tensors[i].shape, tensors[i].tensor->data));
    if (state.exp_avg.empty()) continue;
    stored.push_back(f32_tensor(kExpAvgPrefix + tensors[i].name, tensors[i].shape, state.exp_avg[i]));
    stored.push_back(f32_tensor(kExpAvgSqPrefix + tensors[i].name, tensors[i].shape, state.exp_avg_sq[i]));
  }
  const int64_t num_layers = state.params.config.num_layers;
  for (const auto& [name, values] : named_scales(state.scales)) {
    stored.push_back(f32_tensor(name, {num_layers}, *values));
  }
  const std::filesystem::path target(path);
  const std::string name = target.filename().string();
  io::remove_abandoned_temporaries(target.has_parent_path() ? target.parent_path().string() : ".",
                                   [&](const std::string& candidate) { return candidate == name; });
  io::write_safetensors(path, std::move(stored), state_metadata(state));
}

TrainingState load_training_state(const std::string& path) {
  StateFile file(path);  // io_error / corrupt_data from the safetensors reader
  const bool has_head = check_format(file);
  TrainingState state;
  state.params.config = read_config(file);
  state.recipe = parse_recipe(file.metadata("recipe"), file.path() + ": metadata \"recipe\"", has_head);
  read_counters(file, state);
  file.check_can_hold(state.params.config);
  read_weights(file, state.params);
  read_moments(file, named_tensors(state.params), state);
  read_scales(file, state.params.config.num_layers, state.scales);
  file.check_all_consumed();
  return state;
}

}  // namespace fp8rl::train
