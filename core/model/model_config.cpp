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

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A sum of products of non-negative int64 terms that records overflow instead
// of wrapping, so an absurd config is rejected rather than given a bogus count.
class Counter {
 public:
  void plus(int64_t a, int64_t b = 1, int64_t c = 1) {
    const int64_t product = times(times(a, b), c);
    if (ok_ && product > kMax - total_) ok_ = false;
    if (ok_) total_ += product;
  }
  void plus(const Counter& other, int64_t repeat) {
    ok_ = ok_ && other.ok_;
    plus(other.total_, repeat);
  }
  bool ok() const { return ok_; }
  int64_t total() const { return total_; }

 private:
  int64_t times(int64_t a, int64_t b) {
    if (a != 0 && b > kMax / a) ok_ = false;
    return ok_ ? a * b : 0;
  }
  int64_t total_ = 0;
  bool ok_ = true;
};

// The formula documented at parameter_count(); callers check ok().
Counter count_parameters(const ModelConfig& c) {
  Counter dims;  // q_dim and kv_dim may overflow on their own
  dims.plus(c.num_attention_heads, c.head_dim);
  dims.plus(c.num_key_value_heads, c.head_dim);
  if (!dims.ok()) return dims;

  Counter layer;  // the table's sizes are config fields, q_dim or kv_dim: bounded now
  for (const LayerPart& part : kLayerParts) {
    if (!part.is_linear) {
      if (part.norm.present(c)) layer.plus(part.norm.size(c));
      continue;
    }
    const int64_t out = part.linear.out_features(c);
    layer.plus(out, part.linear.in_features(c));
    if (has_bias(part.linear, c)) layer.plus(out);
  }

  Counter total;
  total.plus(c.vocab_size, c.hidden_size);  // embed_tokens
  total.plus(layer, c.num_layers);
  total.plus(c.hidden_size);                                            // final norm
  if (!c.tie_word_embeddings) total.plus(c.vocab_size, c.hidden_size);  // lm_head
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
  check_positive(c.head_dim, "head_dim", status, where);
  check_positive(c.intermediate_size, "intermediate_size", status, where);
  check_positive(c.max_position_embeddings, "max_position_embeddings", status, where);
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
  if (c.family != ModelFamily::llama && c.family != ModelFamily::qwen2 && c.family != ModelFamily::qwen3) {
    fail(Status::unsupported, where + ": unknown model family " + std::to_string(static_cast<int32_t>(c.family)) +
                                  "; supported: llama, qwen2, qwen3");
  }
  if (c.family == ModelFamily::qwen2 && !c.attention_bias) {
    fail(status, where + ": attention_bias must be true for qwen2 (its q/k/v projections have biases)");
  }
  if (c.qk_norm != (c.family == ModelFamily::qwen3)) {
    fail(status, where + ": qk_norm must be " + (c.qk_norm ? "false" : "true") + " for " + model_type_name(c.family));
  }
}

}  // namespace

const char* model_type_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::llama: return "llama";
    case ModelFamily::qwen2: return "qwen2";
    case ModelFamily::qwen3: return "qwen3";
  }
  return "unknown";
}

const char* architecture_name(ModelFamily family) {
  switch (family) {
    case ModelFamily::llama: return "LlamaForCausalLM";
    case ModelFamily::qwen2: return "Qwen2ForCausalLM";
    case ModelFamily::qwen3: return "Qwen3ForCausalLM";
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

int64_t parameter_count(const ModelConfig& config) {
  validate(config);  // also guarantees the count below does not overflow
  return count_parameters(config).total();
}

void validate(const ModelConfig& config) {
  detail::check_model_config(config, Status::invalid_argument, "model config");
}

namespace detail {

void check_model_config(const ModelConfig& config, Status status, const std::string& where) {
  check_family(config, status, where);
  check_sizes(config, status, where);
  // Before any rule that multiplies sizes, so those products cannot overflow.
  if (!count_parameters(config).ok()) {
    fail(status, where + ": sizes are absurd: the parameter count overflows int64");
  }
  check_heads(config, status, where);
  check_positive(config.rms_norm_eps, "rms_norm_eps", status, where);
  check_rope(config, status, where);
  if (config.bos_token_id) check_token(*config.bos_token_id, "bos_token_id", config, status, where);
  for (const int64_t id : config.eos_token_ids) check_token(id, "eos_token_id", config, status, where);
}

}  // namespace detail
}  // namespace fp8rl::model
