// The architecture of a policy: a decoder-only transformer of the Llama
// family (Llama 2/3, SmolLM2, Qwen2/2.5, Qwen3, Qwen3-MoE), as read from and
// written to a Hugging Face `config.json`. Pre-norm blocks of RMSNorm -> GQA
// attention with RoPE -> RMSNorm -> SwiGLU MLP, or in a sparse layer a
// Mixture-of-Experts of SwiGLU MLPs, then a final RMSNorm and the LM head.
//
// Usage:
//   ModelConfig config = load_model_config("Qwen3-0.6B/config.json");
//   int64_t weights = parameter_count(config);
//   save_model_config("out/config.json", config);
//
// Errors (fp8rl::Error): a bad file is corrupt_data, a config built in code
// that does not hold together is invalid_argument, an architecture or option
// this library does not implement is unsupported, a file that cannot be read
// or written is io_error. Every message names the field (and the file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/io/json.h"

namespace fp8rl::model {

// Values are stable (they may cross the C ABI later); only ever appended.
enum class ModelFamily : int32_t {
  llama = 0,  // also SmolLM2 and Mistral-style configs with model_type "llama"
  qwen2 = 1,  // bias on q/k/v projections (not on o_proj)
  qwen3 = 2,  // RMSNorm over each head of q and k (qk_norm) before RoPE
  qwen3_moe = 3,  // Qwen3 attention; sparse layers' MLP a Mixture-of-Experts (MoeConfig)
};

enum class RopeScalingType : int32_t {
  none = 0,    // plain RoPE: rope_scaling null, absent or rope_type "default"
  llama3 = 1,  // Llama 3.1/3.2 frequency-dependent interpolation
};

// Llama-3 RoPE scaling: wavelengths shorter than
// original_max_position_embeddings / high_freq_factor keep their frequency,
// those longer than original_max_position_embeddings / low_freq_factor are
// divided by `factor`, and the band between is interpolated smoothly.
struct RopeScaling {
  RopeScalingType type = RopeScalingType::none;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;
};

// The Mixture-of-Experts part of a qwen3_moe config, Hugging Face's
// Qwen3MoeConfig keys. A sparse layer's MLP is a router (mlp.gate, FP32 under
// every recipe) choosing num_experts_per_tok of num_experts SwiGLU experts of
// width moe_intermediate_size for each token; no shared experts. Defaults are
// Hugging Face's, taken for a key the file leaves out; num_experts 0 (every
// other family) means no sparse layer.
struct MoeConfig {
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;  // k: the experts each token goes to
  int64_t moe_intermediate_size = 0;
  // Whether the k chosen probabilities are divided by their sum. Hugging
  // Face's default is false while Qwen3-30B-A3B's file says true: always
  // written, and read from the file when present.
  bool norm_topk_prob = false;
  // Layer i is sparse when i is not in mlp_only_layers and
  // (i + 1) % decoder_sparse_step == 0; other layers have the dense MLP of
  // intermediate_size.
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  // Kept with the model as the file states it; the trainer's load-balancing
  // coefficient is its own option (default 0 for RL).
  double router_aux_loss_coef = 0.001;
};

struct ModelConfig {
  ModelFamily family = ModelFamily::llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;           // "num_hidden_layers"
  int64_t num_attention_heads = 0;  // query heads
  int64_t num_key_value_heads = 0;  // GQA: each kv head serves heads / kv_heads query heads
  // Per-head width. When head_dim_explicit is false it is hidden_size / heads
  // and must divide exactly; Qwen3 writes it explicitly and then q_dim may
  // differ from hidden_size (Qwen3-0.6B: 16 heads x 128 = 2048 vs 1024).
  int64_t head_dim = 0;
  bool head_dim_explicit = false;
  int64_t intermediate_size = 0;  // SwiGLU width: gate and up are hidden -> this
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 0.0;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;  // lm_head shares the embedding matrix
  // Bias on the q/k/v projections. Qwen2 always has it (its config has no
  // key); for Llama and Qwen3 "attention_bias" also adds a bias to o_proj,
  // as Hugging Face does: see has_output_projection_bias().
  bool attention_bias = false;
  bool qk_norm = false;  // Qwen3 and Qwen3-MoE exactly
  MoeConfig moe;         // qwen3_moe only
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // "eos_token_id": an int or a list
  std::string torch_dtype;             // stored weights' dtype, informational
};

// Plain upper limits on a config's sizes, checked by validate() and when a
// config is read: above every published model (Llama-3.1-405B: 126 layers,
// hidden 16384, intermediate 53248, 128 heads; Gemma 3: vocabulary 262144),
// so that a forged config.json cannot make a loader allocate or loop without
// bound, and so that every size product fits int64 with room to spare (the
// parameter count stays below 2^58).
struct ModelConfigLimits {
  static constexpr int64_t max_layers = 1024;
  static constexpr int64_t max_vocab_size = int64_t{1} << 24;
  static constexpr int64_t max_hidden_size = int64_t{1} << 16;
  static constexpr int64_t max_intermediate_size = int64_t{1} << 20;
  static constexpr int64_t max_heads = 1024;  // query heads and key/value heads each
  static constexpr int64_t max_head_dim = 1024;
  static constexpr int64_t max_position_embeddings = int64_t{1} << 24;
  static constexpr int64_t max_experts = 1024;  // Qwen3: 128, DeepSeek-V3: 256
};

// The supported families and their Hugging Face names.
const char* model_type_name(ModelFamily family);    // "llama", "qwen2", "qwen3", "qwen3_moe"
const char* architecture_name(ModelFamily family);  // "LlamaForCausalLM", ...

// For a validated config (validate() guarantees these products fit).
int64_t q_dim(const ModelConfig& config);   // heads * head_dim
int64_t kv_dim(const ModelConfig& config);  // kv_heads * head_dim
bool has_output_projection_bias(const ModelConfig& config);
// Whether layer `layer` has the Mixture-of-Experts MLP (MoeConfig's rule).
bool is_sparse_layer(const ModelConfig& config, int64_t layer);
int64_t sparse_layer_count(const ModelConfig& config);

// Number of weights: vocab * hidden embeddings, then per layer every weight,
// bias and norm of the layer table (core/model/layer_parts.h) that the layer
// has, with all num_experts experts of a sparse layer, then the final RMSNorm
// (hidden) and, unless tied, the lm_head (vocab * hidden).
// Validates first, so it throws invalid_argument for an invalid config.
int64_t parameter_count(const ModelConfig& config);
// The weights one token computes with: parameter_count with only
// num_experts_per_tok experts per sparse layer (equal for a dense model).
int64_t active_parameter_count(const ModelConfig& config);

// Throws invalid_argument naming the field for a config that cannot describe
// a model: non-positive sizes, heads % kv_heads != 0, hidden_size !=
// heads * head_dim when head_dim is implied, an odd head_dim (RoPE rotates
// pairs), a size above ModelConfigLimits, eps or theta <= 0 or non-finite,
// bad rope scaling; MoE fields on a dense family, num_experts outside [1,
// max_experts], num_experts_per_tok outside [1, num_experts], a non-positive
// moe_intermediate_size or decoder_sparse_step, an mlp_only_layers entry
// outside [0, num_layers) or repeated, a negative router_aux_loss_coef;
// unsupported for a family value outside the enum. Sizes need not be
// multiples of 128.
void validate(const ModelConfig& config);

// Reads a config.json tree; `source` names it in messages (a path). Keys not
// listed here are ignored. Required: model_type, vocab_size, hidden_size,
// num_hidden_layers, num_attention_heads, intermediate_size, rms_norm_eps,
// max_position_embeddings. Optional, with Hugging Face's defaults:
// num_key_value_heads (= heads), head_dim (= hidden / heads), rope_theta
// (10000), rope_scaling (none), tie_word_embeddings (false), attention_bias
// (false; implied true for qwen2), bos/eos_token_id (none), torch_dtype or
// dtype (""); for qwen3_moe the MoeConfig keys (Hugging Face's defaults:
// 128 experts, 8 per token, width 768, norm_topk_prob false, step 1, no
// mlp-only layers, coefficient 0.001). The result is validated as above but
// with corrupt_data.
// unsupported: a model_type, rope type, hidden_act other than silu,
// mlp_bias or use_sliding_window that this library does not implement.
ModelConfig parse_model_config(const io::Json& json, const std::string& source);

// Reads and parses a config.json of at most 1 MiB (real ones are ~1 KiB).
ModelConfig load_model_config(const std::string& path);

// The config as Hugging Face writes it (model_type, architectures and the
// keys above), such that parse_model_config gives back an equal config.
// Validates first (invalid_argument).
io::Json model_config_to_json(const ModelConfig& config);

// Writes model_config_to_json to a temporary file renamed over `path`, so a
// reader never sees half a file. io_error on failure.
void save_model_config(const std::string& path, const ModelConfig& config);

}  // namespace fp8rl::model
