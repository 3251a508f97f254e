// ModelConfig <-> Hugging Face config.json. Reading is strict about the keys
// it uses (type, range, presence) and ignores the rest, since every release
// of transformers adds keys that do not change the architecture.
#include <string>
#include <utility>
#include <vector>

#include "core/io/atomic_file.h"
#include "core/io/json.h"
#include "core/io/regular_file.h"
#include "core/model/model_config.h"
#include "core/model/model_config_check.h"
#include "kernels/error.h"

namespace fp8rl::model {
namespace {

using io::Json;

constexpr size_t kMaxConfigBytes = 1u << 20;

// Typed access to the members of one JSON object; every failure is
// corrupt_data naming the file and the key. null counts as absent, as
// transformers reads a None attribute as "use the default".
class Fields {
 public:
  Fields(const Json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object.is_object()) fail(Status::corrupt_data, where_ + ": expected an object, got " + type(object));
  }

  const Json* optional(const char* key) const {
    const Json* value = object_.find(key);
    return value != nullptr && !value->is_null() ? value : nullptr;
  }
  const Json& required(const char* key) const {
    const Json* value = optional(key);
    if (value == nullptr) fail(Status::corrupt_data, where_ + ": missing required key \"" + key + "\"");
    return *value;
  }

  int64_t integer(const char* key, const Json& value) const {
    if (!value.is_int64()) wrong(key, "an integer", value);
    return value.as_int64();
  }
  double number(const char* key, const Json& value) const {
    if (!value.is_number()) wrong(key, "a number", value);
    return value.as_double();
  }
  bool boolean(const char* key, const Json& value) const {
    if (value.type() != Json::Type::boolean) wrong(key, "true or false", value);
    return value.as_bool();
  }
  const std::string& string(const char* key, const Json& value) const {
    if (!value.is_string()) wrong(key, "a string", value);
    return value.as_string();
  }

  int64_t integer(const char* key) const { return integer(key, required(key)); }
  double number(const char* key) const { return number(key, required(key)); }
  const std::string& where() const { return where_; }

 private:
  const Json& object_;
  std::string where_;

  static std::string type(const Json& value) {
    if (value.is_number() && !value.is_int64()) return "a non-integer number";
    return io::json_type_name(value.type());
  }
  [[noreturn]] void wrong(const char* key, const char* expected, const Json& value) const {
    fail(Status::corrupt_data, where_ + ": key \"" + key + "\": expected " + expected + ", got " + type(value));
  }
};

ModelFamily parse_family(const Fields& fields) {
  const std::string& name = fields.string("model_type", fields.required("model_type"));
  for (const ModelFamily family :
       {ModelFamily::llama, ModelFamily::qwen2, ModelFamily::qwen3, ModelFamily::qwen3_moe}) {
    if (name == model_type_name(family)) return family;
  }
  fail(Status::unsupported,
       fields.where() + ": model_type \"" + name + "\" is not supported; supported: llama, qwen2, qwen3, qwen3_moe");
}

// Rejects options that change the computation in ways not implemented here.
void reject_unsupported(const Fields& fields) {
  const Json* act = fields.optional("hidden_act");
  if (act != nullptr && fields.string("hidden_act", *act) != "silu") {
    fail(Status::unsupported,
         fields.where() + ": hidden_act \"" + act->as_string() + "\" is not supported; supported: silu");
  }
  for (const char* key : {"mlp_bias", "use_sliding_window"}) {
    const Json* value = fields.optional(key);
    if (value != nullptr && fields.boolean(key, *value)) {
      fail(Status::unsupported, fields.where() + ": " + key + " true is not supported");
    }
  }
}

RopeScaling parse_rope_scaling(const Fields& root) {
  const Json* node = root.optional("rope_scaling");
  if (node == nullptr) return {};
  const Fields fields(*node, root.where() + ": rope_scaling");
  // Older configs spell the key "type".
  const char* key = fields.optional("rope_type") != nullptr ? "rope_type" : "type";
  const std::string& name = fields.string(key, fields.required(key));
  if (name == "default") return {};
  if (name != "llama3") {
    fail(Status::unsupported,
         fields.where() + ": rope_type \"" + name + "\" is not supported; supported: llama3, default");
  }
  RopeScaling scaling;
  scaling.type = RopeScalingType::llama3;
  scaling.factor = fields.number("factor");
  scaling.low_freq_factor = fields.number("low_freq_factor");
  scaling.high_freq_factor = fields.number("high_freq_factor");
  scaling.original_max_position_embeddings = fields.integer("original_max_position_embeddings");
  return scaling;
}

std::vector<int64_t> parse_eos(const Fields& fields) {
  const Json* eos = fields.optional("eos_token_id");
  if (eos == nullptr) return {};
  if (!eos->is_array()) return {fields.integer("eos_token_id", *eos)};
  std::vector<int64_t> ids;
  for (const Json& id : eos->elements()) ids.push_back(fields.integer("eos_token_id", id));
  return ids;
}

// The attention extras each family implies or reads.
void parse_attention_extras(const Fields& fields, ModelConfig& config) {
  config.qk_norm = config.family == ModelFamily::qwen3 || config.family == ModelFamily::qwen3_moe;
  const Json* bias = fields.optional("attention_bias");
  if (config.family == ModelFamily::qwen2) {
    // Qwen2 has q/k/v biases whatever the key says; a false would describe
    // weights this model does not have.
    if (bias != nullptr && !fields.boolean("attention_bias", *bias)) {
      fail(Status::corrupt_data, fields.where() + ": attention_bias false contradicts model_type qwen2");
    }
    config.attention_bias = true;
  } else {
    config.attention_bias = bias != nullptr && fields.boolean("attention_bias", *bias);
  }
}

void parse_sizes(const Fields& fields, ModelConfig& config) {
  config.vocab_size = fields.integer("vocab_size");
  config.hidden_size = fields.integer("hidden_size");
  config.num_layers = fields.integer("num_hidden_layers");
  config.num_attention_heads = fields.integer("num_attention_heads");
  const Json* kv_heads = fields.optional("num_key_value_heads");
  config.num_key_value_heads =
      kv_heads != nullptr ? fields.integer("num_key_value_heads", *kv_heads) : config.num_attention_heads;
  const Json* head_dim = fields.optional("head_dim");
  config.head_dim_explicit = head_dim != nullptr;
  if (head_dim != nullptr) {
    config.head_dim = fields.integer("head_dim", *head_dim);
  } else if (config.num_attention_heads > 0) {  // else validation reports the heads
    config.head_dim = config.hidden_size / config.num_attention_heads;
  }
  config.intermediate_size = fields.integer("intermediate_size");
  config.max_position_embeddings = fields.integer("max_position_embeddings");
}

void parse_info(const Fields& fields, ModelConfig& config) {
  const Json* tie = fields.optional("tie_word_embeddings");
  config.tie_word_embeddings = tie != nullptr && fields.boolean("tie_word_embeddings", *tie);
  const Json* bos = fields.optional("bos_token_id");
  if (bos != nullptr) config.bos_token_id = fields.integer("bos_token_id", *bos);
  config.eos_token_ids = parse_eos(fields);
  // transformers >= 4.56 writes "dtype" where older versions wrote "torch_dtype".
  for (const char* key : {"torch_dtype", "dtype"}) {
    const Json* dtype = fields.optional(key);
    if (dtype != nullptr) config.torch_dtype = fields.string(key, *dtype);
  }
}

// Hugging Face's Qwen3MoeConfig defaults for the keys a file leaves out.
MoeConfig parse_moe(const Fields& fields) {
  MoeConfig moe;
  const auto integer = [&](const char* key, int64_t fallback) {
    const Json* value = fields.optional(key);
    return value != nullptr ? fields.integer(key, *value) : fallback;
  };
  moe.num_experts = integer("num_experts", 128);
  moe.num_experts_per_tok = integer("num_experts_per_tok", 8);
  moe.moe_intermediate_size = integer("moe_intermediate_size", 768);
  moe.decoder_sparse_step = integer("decoder_sparse_step", 1);
  const Json* norm = fields.optional("norm_topk_prob");
  moe.norm_topk_prob = norm != nullptr && fields.boolean("norm_topk_prob", *norm);
  const Json* dense = fields.optional("mlp_only_layers");
  if (dense != nullptr && !dense->is_array()) {
    fail(Status::corrupt_data, fields.where() + ": key \"mlp_only_layers\": expected an array of layer indices");
  }
  if (dense != nullptr) {
    // Bounded before the list is read: validation compares entries pairwise.
    if (dense->elements().size() > static_cast<size_t>(ModelConfigLimits::max_layers)) {
      fail(Status::corrupt_data, fields.where() + ": mlp_only_layers lists " +
                                     std::to_string(dense->elements().size()) + " layers, above the layer limit");
    }
    for (const Json& layer : dense->elements()) moe.mlp_only_layers.push_back(fields.integer("mlp_only_layers", layer));
  }
  const Json* coef = fields.optional("router_aux_loss_coef");
  if (coef != nullptr) moe.router_aux_loss_coef = fields.number("router_aux_loss_coef", *coef);
  return moe;
}

void append_moe_members(const MoeConfig& moe, std::vector<Json::Member>& members) {
  std::vector<Json> dense;
  for (const int64_t layer : moe.mlp_only_layers) dense.push_back(Json::integer(layer));
  members.emplace_back("num_experts", Json::integer(moe.num_experts));
  members.emplace_back("num_experts_per_tok", Json::integer(moe.num_experts_per_tok));
  members.emplace_back("moe_intermediate_size", Json::integer(moe.moe_intermediate_size));
  members.emplace_back("norm_topk_prob", Json::boolean(moe.norm_topk_prob));
  members.emplace_back("decoder_sparse_step", Json::integer(moe.decoder_sparse_step));
  members.emplace_back("mlp_only_layers", Json::array(std::move(dense)));
  members.emplace_back("router_aux_loss_coef", Json::number(moe.router_aux_loss_coef));
}

Json eos_to_json(const std::vector<int64_t>& ids) {
  if (ids.size() == 1) return Json::integer(ids[0]);
  std::vector<Json> elements;
  for (const int64_t id : ids) elements.push_back(Json::integer(id));
  return Json::array(std::move(elements));
}

Json rope_scaling_to_json(const RopeScaling& scaling) {
  if (scaling.type == RopeScalingType::none) return Json();
  return Json::object({
      {"rope_type", Json::string("llama3")},
      {"factor", Json::number(scaling.factor)},
      {"low_freq_factor", Json::number(scaling.low_freq_factor)},
      {"high_freq_factor", Json::number(scaling.high_freq_factor)},
      {"original_max_position_embeddings", Json::integer(scaling.original_max_position_embeddings)},
  });
}

}  // namespace

ModelConfig parse_model_config(const Json& json, const std::string& source) {
  const Fields fields(json, source);
  ModelConfig config;
  config.family = parse_family(fields);
  reject_unsupported(fields);
  parse_sizes(fields, config);
  config.rms_norm_eps = fields.number("rms_norm_eps");
  const Json* theta = fields.optional("rope_theta");
  if (theta != nullptr) config.rope_theta = fields.number("rope_theta", *theta);
  config.rope_scaling = parse_rope_scaling(fields);
  parse_attention_extras(fields, config);
  if (config.family == ModelFamily::qwen3_moe) config.moe = parse_moe(fields);
  parse_info(fields, config);
  detail::check_model_config(config, Status::corrupt_data, source);
  return config;
}

ModelConfig load_model_config(const std::string& path) {
  // io_error for a missing or non-regular file, corrupt_data above the limit
  const std::string text = io::read_small_file(path, kMaxConfigBytes);
  return parse_model_config(io::parse_json(text, path, io::JsonLimits{kMaxConfigBytes, 32}), path);
}

Json model_config_to_json(const ModelConfig& config) {
  validate(config);
  std::vector<Json::Member> members = {
      {"architectures", Json::array({Json::string(architecture_name(config.family))})},
      {"model_type", Json::string(model_type_name(config.family))},
      {"vocab_size", Json::integer(config.vocab_size)},
      {"hidden_size", Json::integer(config.hidden_size)},
      {"num_hidden_layers", Json::integer(config.num_layers)},
      {"num_attention_heads", Json::integer(config.num_attention_heads)},
      {"num_key_value_heads", Json::integer(config.num_key_value_heads)},
      {"intermediate_size", Json::integer(config.intermediate_size)},
      {"hidden_act", Json::string("silu")},
      {"max_position_embeddings", Json::integer(config.max_position_embeddings)},
      {"rms_norm_eps", Json::number(config.rms_norm_eps)},
      {"rope_theta", Json::number(config.rope_theta)},
      {"rope_scaling", rope_scaling_to_json(config.rope_scaling)},
      {"tie_word_embeddings", Json::boolean(config.tie_word_embeddings)},
      {"attention_bias", Json::boolean(config.attention_bias)},
  };
  // Written only when explicit, so an implied head_dim stays implied.
  if (config.head_dim_explicit) members.emplace_back("head_dim", Json::integer(config.head_dim));
  if (config.bos_token_id) members.emplace_back("bos_token_id", Json::integer(*config.bos_token_id));
  if (!config.eos_token_ids.empty()) members.emplace_back("eos_token_id", eos_to_json(config.eos_token_ids));
  if (!config.torch_dtype.empty()) members.emplace_back("torch_dtype", Json::string(config.torch_dtype));
  if (config.family == ModelFamily::qwen3_moe) append_moe_members(config.moe, members);
  return Json::object(std::move(members));
}

void save_model_config(const std::string& path, const ModelConfig& config) {
  io::write_file_atomically(path, io::write_json(model_config_to_json(config)));
}

}  // namespace fp8rl::model
