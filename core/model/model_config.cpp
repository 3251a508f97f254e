// Derived sizes, the parameter count and the consistency rules of a
// ModelConfig. The JSON side lives in model_config_json.cpp.
#include "core/model/model_config.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/model/layer_parts.h"
#include "core/model/model_config_check.h"
#include "kernels/error.h"

namespace fp8rl::model {
namespace {

// The formula documented at parameter_count(), with `experts` experts in
// each sparse layer. Within ModelConfigLimits every product and the sum stay
// below 2^58, far from overflowing int64.
int64_t count_parameters(const ModelConfig& c, int64_t experts) {
  int64_t total = c.vocab_size * c.hidden_size;  // embed_tokens
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    for (const LayerPart& part : kLayerParts) {
      if (!part.is_linear) {
        if (part.norm.present(c)) total += part.norm.size(c);
        continue;
      }
      if (!present(part.linear, c, layer)) continue;
      const int64_t out = part.linear.out_features(c);
      total += out * part.linear.in_features(c);
      if (has_bias(part.linear, c)) total += out;
    }
    if (!is_sparse_layer(c, layer)) continue;
    for (const ExpertPart& part : kExpertParts) total += experts * part.out_features(c) * part.in_features(c);
  }
  total += c.hidden_size;                                             // final norm
  if (!c.tie_word_embeddings) total += c.vocab_size * c.hidden_size;  // lm_head
  return total;
}

// "%g"-like but exact, so 1e-7 does not print as 0.000000.
std::string format(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

// Throws for a field that must be > 0 (and finite, for doubles).
void check_positive(int64_t value, const char* field, Status status, const std::string& where) {
  if (value <= 0) fail(status, where + ": " + field + " must be positive, got " + std::to_string(value));
}

void check_positive(double value, const char* field, Status status, const std::string& where) {
  if (!(value > 0.0) || !std::isfinite(value)) {
    fail(status, where + ": " + field + " must be positive and finite, got " + format(value));
  }
}

void check_sizes(const ModelConfig& c, Status status, const std::string& where) {
  check_positive(c.vocab_size, "vocab_size", status, where);
  check_positive(c.hidden_size, "hidden_size", status, where);
  check_positive(c.num_layers, "num_hidden_layers", status, where);
  check_positive(c.num_attention_heads, "num_attention_heads", status, where);
  check_positive(c.num_key_value_heads, "num_key_value_heads", status, where);
  check_positive(c.intermediate_size, "intermediate_size", status, where);
  check_positive(c.max_position_embeddings, "max_position_embeddings", status, where);
}

void check_limit(int64_t value, int64_t limit, const char* field, Status status, const std::string& where) {
  if (value > limit) {
    fail(status, where + ": " + field + " is " + std::to_string(value) + ", above this library's limit of " +
                     std::to_string(limit));
  }
}

void check_limits(const ModelConfig& c, Status status, const std::string& where) {
  using L = ModelConfigLimits;
  check_limit(c.vocab_size, L::max_vocab_size, "vocab_size", status, where);
  check_limit(c.hidden_size, L::max_hidden_size, "hidden_size", status, where);
  check_limit(c.num_layers, L::max_layers, "num_hidden_layers", status, where);
  check_limit(c.num_attention_heads, L::max_heads, "num_attention_heads", status, where);
  check_limit(c.num_key_value_heads, L::max_heads, "num_key_value_heads", status, where);
  check_limit(c.head_dim, L::max_head_dim, "head_dim", status, where);
  check_limit(c.intermediate_size, L::max_intermediate_size, "intermediate_size", status, where);
  check_limit(c.max_position_embeddings, L::max_position_embeddings, "max_position_embeddings", status, where);
}

void check_no_moe(const ModelConfig& c, Status status, const std::string& where) {
  const MoeConfig& m = c.moe;
  if (m.num_experts != 0 || m.num_experts_per_tok != 0 || m.moe_intermediate_size != 0 || !m.mlp_only_layers.empty()) {
    fail(status, where +
                     ": num_experts, num_experts_per_tok, moe_intermediate_size and mlp_only_layers are for "
                     "qwen3_moe; " +
                     model_type_name(c.family) + " has no experts");
  }
}

// Before any product of MoE sizes, like check_limits.
void check_moe(const ModelConfig& c, Status status, const std::string& where) {
  using L = ModelConfigLimits;
  const MoeConfig& m = c.moe;
  check_positive(m.num_experts, "num_experts", status, where);
  check_limit(m.num_experts, L::max_experts, "num_experts", status, where);
  check_positive(m.num_experts_per_tok, "num_experts_per_tok", status, where);
  if (m.num_experts_per_tok > m.num_experts) {
    fail(status, where + ": num_experts_per_tok (" + std::to_string(m.num_experts_per_tok) + ") exceeds num_experts (" +
                     std::to_string(m.num_experts) + ")");
  }
  check_positive(m.moe_intermediate_size, "moe_intermediate_size", status, where);
  check_limit(m.moe_intermediate_size, L::max_intermediate_size, "moe_intermediate_size", status, where);
  check_positive(m.decoder_sparse_step, "decoder_sparse_step", status, where);
  for (size_t i = 0; i < m.mlp_only_layers.size(); ++i) {
    const int64_t layer = m.mlp_only_layers[i];
    if (layer < 0 || layer >= c.num_layers) {
      fail(status, where + ": mlp_only_layers[" + std::to_string(i) + "] = " + std::to_string(layer) +
                       " is not a layer of [0, " + std::to_string(c.num_layers) + ")");
    }
    for (size_t j = 0; j < i; ++j) {
      if (m.mlp_only_layers[j] == layer) {
        fail(status, where + ": mlp_only_layers names layer " + std::to_string(layer) + " twice");
      }
    }
  }
  if (!(m.router_aux_loss_coef >= 0.0) || !std::isfinite(m.router_aux_loss_coef)) {
    fail(status,
         where + ": router_aux_loss_coef must be finite and non-negative, got " + format(m.router_aux_loss_coef));
  }
}

void check_heads(const ModelConfig& c, Status status, const std::string& where) {
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    fail(status, where + ": num_attention_heads (" + std::to_string(c.num_attention_heads) +
                     ") is not a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) + ")");
  }
  // An implied head_dim is hidden / heads: it must be exact, or q_dim would
  // silently differ from hidden_size.
  if (!c.head_dim_explicit && c.head_dim * c.num_attention_heads != c.hidden_size) {
    fail(status, where + ": hidden_size (" + std::to_string(c.hidden_size) + ") != num_attention_heads (" +
                     std::to_string(c.num_attention_heads) + ") * head_dim (" + std::to_string(c.head_dim) +
                     ") and head_dim is not given explicitly");
  }
  // RoPE rotates pairs of dimensions within a head.
  if (c.head_dim % 2 != 0) fail(status, where + ": head_dim must be even, got " + std::to_string(c.head_dim));
}

void check_rope(const ModelConfig& c, Status status, const std::string& where) {
  check_positive(c.rope_theta, "rope_theta", status, where);
  const RopeScaling& s = c.rope_scaling;
  if (s.type == RopeScalingType::none) return;
  if (s.type != RopeScalingType::llama3) fail(Status::unsupported, where + ": unknown rope_scaling type");
  check_positive(s.factor, "rope_scaling.factor", status, where);
  check_positive(s.low_freq_factor, "rope_scaling.low_freq_factor", status, where);
  check_positive(s.high_freq_factor, "rope_scaling.high_freq_factor", status, where);
  check_positive(s.original_max_position_embeddings, "rope_scaling.original_max_position_embeddings", status, where);
  // The interpolation band divides by high - low.
  if (!(s.high_freq_factor > s.low_freq_factor)) {
    fail(status, where + ": rope_scaling.high_freq_factor must exceed low_freq_factor");
  }
}

void check_token(int64_t id, const char* field, const ModelConfig& c, Status status, const std::string& where) {
  if (id < 0 || id >= c.vocab_size) {
    fail(status, where + ": " + field + " " + std::to_string(id) + " is outside the vocabulary [0, " +
                     std::to_string(c.vocab_size) + ")");
  }
}

// Each family fixes its attention extras; a mismatch means a different model.
void check_family(const ModelConfig& c, Status status, const std::string& where) {
  if (c.family != ModelFamily::llama && c.family != ModelFamily::qwen2 && c.family != ModelFamily::qwen3 &&
      c.family != ModelFamily::qwen3_moe) {
    fail(Status::unsupported, where + ": unknown model family " + std::to_string(static_cast<int32_t>(c.family)) +
                                  "; supported: llama, qwen2, qwen3, qwen3_moe");
  }
  if (c.family == ModelFamily::qwen2 && !c.attention_bias) {
    fail(status, where + ": attention_bias must be true for qwen2 (its q/k/v projections have biases)");
  }
  if (c.qk_norm != (c.family == ModelFamily::qwen3 || c.family == ModelFamily::qwen3_moe)) {
    fail(status, where + ": qk_norm must be " + (c.qk_norm ? "false" : "true") + " for " + model_type_name(c.family));
  }
}

}  // namespace

const char* model_type_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::llama: return "llama";
    case ModelFamily::qwen2: return "qwen2";
    case ModelFamily::qwen3: return "qwen3";
    case ModelFamily::qwen3_moe: return "qwen3_moe";
  }
  return "unknown";
}

const char* architecture_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::llama: return "LlamaForCausalLM";
    case ModelFamily::qwen2: return "Qwen2ForCausalLM";
    case ModelFamily::qwen3: return "Qwen3ForCausalLM";
    case ModelFamily::qwen3_moe: return "Qwen3MoeForCausalLM";
  }
  return "unknown";
}

int64_t q_dim(const ModelConfig& config) { return config.num_attention_heads * config.head_dim; }

int64_t kv_dim(const ModelConfig& config) { return config.num_key_value_heads * config.head_dim; }

// Hugging Face's LlamaAttention and Qwen3Attention pass attention_bias to
// o_proj too; Qwen2Attention hard-codes o_proj without bias.
bool has_output_projection_bias(const ModelConfig& config) {
  return config.attention_bias && config.family != ModelFamily::qwen2;
}

// Hugging Face's Qwen3MoeDecoderLayer rule.
bool is_sparse_layer(const ModelConfig& config, int64_t layer) {
  const MoeConfig& m = config.moe;
  if (m.num_experts == 0) return false;
  for (const int64_t dense : m.mlp_only_layers) {
    if (dense == layer) return false;
  }
  return (layer + 1) % m.decoder_sparse_step == 0;
}

int64_t sparse_layer_count(const ModelConfig& config) {
  int64_t count = 0;
  for (int64_t layer = 0; layer < config.num_layers; ++layer) count += is_sparse_layer(config, layer);
  return count;
}

int64_t parameter_count(const ModelConfig& config) {
  validate(config);  // also bounds the sizes, so the count cannot overflow
  return count_parameters(config, config.moe.num_experts);
}

int64_t active_parameter_count(const ModelConfig& config) {
  validate(config);
  return count_parameters(config, config.moe.num_experts_per_tok);
}

void validate(const ModelConfig& config) {
  detail::check_model_config(config, Status::invalid_argument, "model config");
}

namespace detail {

void check_model_config(const ModelConfig& config, Status status, const std::string& where) {
  check_family(config, status, where);
  check_sizes(config, status, where);
  // Before any rule that multiplies sizes, so those products cannot overflow.
  check_limits(config, status, where);
  // After the limits: an implied head_dim is hidden / heads, so a head count
  // beyond its limit would otherwise be reported as head_dim 0.
  check_positive(config.head_dim, "head_dim", status, where);
  if (config.family == ModelFamily::qwen3_moe) {
    check_moe(config, status, where);
  } else {
    check_no_moe(config, status, where);
  }
  check_heads(config, status, where);
  check_positive(config.rms_norm_eps, "rms_norm_eps", status, where);
  check_rope(config, status, where);
  if (config.bos_token_id) check_token(*config.bos_token_id, "bos_token_id", config, status, where);
  for (const int64_t id : config.eos_token_ids) check_token(id, "eos_token_id", config, status, where);
}

}  // namespace detail
}  // namespace fp8rl::model
