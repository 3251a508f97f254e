#include "api_guard.h"
#include "enum_mapping.h"
#include "model_config_convert.h"

namespace fp8rl::capi {

fp8rl_model_config default_model_config() {
  fp8rl_model_config config{};
  config.struct_size = sizeof(config);
  config.family = FP8RL_MODEL_FAMILY_LLAMA;
  config.rms_norm_eps = 1e-5;
  config.rope_theta = 10000.0;
  config.rope_scaling = FP8RL_ROPE_SCALING_NONE;
  const model::RopeScaling rope;  // the core's defaults for the Llama-3 parameters
  config.rope_factor = rope.factor;
  config.rope_low_freq_factor = rope.low_freq_factor;
  config.rope_high_freq_factor = rope.high_freq_factor;
  config.rope_original_max_position_embeddings = rope.original_max_position_embeddings;
  config.bos_token_id = -1;
  config.num_eos_token_ids = 0;
  const model::MoeConfig moe;  // the core's defaults: no experts
  config.decoder_sparse_step = moe.decoder_sparse_step;
  config.router_aux_loss_coef = moe.router_aux_loss_coef;
  return config;
}

namespace {

model::MoeConfig moe_config_from(const fp8rl_model_config& c, const std::string& prefix) {
  model::MoeConfig moe;
  moe.num_experts = c.num_experts;
  moe.num_experts_per_tok = c.num_experts_per_tok;
  moe.moe_intermediate_size = c.moe_intermediate_size;
  moe.norm_topk_prob = c.norm_topk_prob != 0;
  moe.decoder_sparse_step = c.decoder_sparse_step;
  require(c.num_mlp_only_layers >= 0 && c.num_mlp_only_layers <= FP8RL_MAX_MLP_ONLY_LAYERS,
          prefix + "num_mlp_only_layers is " + std::to_string(c.num_mlp_only_layers) + "; expected 0 to " +
              std::to_string(FP8RL_MAX_MLP_ONLY_LAYERS));
  moe.mlp_only_layers.assign(c.mlp_only_layers, c.mlp_only_layers + c.num_mlp_only_layers);
  moe.router_aux_loss_coef = c.router_aux_loss_coef;
  return moe;
}

void moe_config_to(const model::MoeConfig& moe, fp8rl_model_config& c) {
  c.num_experts = moe.num_experts;
  c.num_experts_per_tok = moe.num_experts_per_tok;
  c.moe_intermediate_size = moe.moe_intermediate_size;
  c.norm_topk_prob = moe.norm_topk_prob ? 1 : 0;
  c.decoder_sparse_step = moe.decoder_sparse_step;
  if (moe.mlp_only_layers.size() > FP8RL_MAX_MLP_ONLY_LAYERS) {
    fail(Status::unsupported, "the model has " + std::to_string(moe.mlp_only_layers.size()) +
                                  " mlp_only_layers; fp8rl_model_config holds at most " +
                                  std::to_string(FP8RL_MAX_MLP_ONLY_LAYERS));
  }
  for (size_t i = 0; i < moe.mlp_only_layers.size(); ++i)
    c.mlp_only_layers[i] = static_cast<int32_t>(moe.mlp_only_layers[i]);
  c.num_mlp_only_layers = static_cast<int32_t>(moe.mlp_only_layers.size());
  c.router_aux_loss_coef = moe.router_aux_loss_coef;
}

}  // namespace

model::ModelConfig model_config_from(const fp8rl_model_config* given, const char* name) {
  const fp8rl_model_config c = read_options(given, default_model_config(), name);
  const std::string prefix = std::string(name) + "->";
  model::ModelConfig config;
  config.family = model_family_from(c.family, prefix + "family");
  config.vocab_size = c.vocab_size;
  config.hidden_size = c.hidden_size;
  config.num_layers = c.num_layers;
  config.num_attention_heads = c.num_attention_heads;
  config.num_key_value_heads = c.num_key_value_heads;
  require(c.head_dim >= 0, prefix + "head_dim is " + std::to_string(c.head_dim) + "; expected 0 (implied) or > 0");
  config.head_dim_explicit = c.head_dim > 0;
  // An implied head_dim that does not divide exactly is reported by validate().
  config.head_dim = config.head_dim_explicit    ? c.head_dim
                    : c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads
                                                : 0;
  config.intermediate_size = c.intermediate_size;
  config.max_position_embeddings = c.max_position_embeddings;
  config.rms_norm_eps = c.rms_norm_eps;
  config.rope_theta = c.rope_theta;
  config.rope_scaling.type = rope_scaling_from(c.rope_scaling, prefix + "rope_scaling");
  config.rope_scaling.factor = c.rope_factor;
  config.rope_scaling.low_freq_factor = c.rope_low_freq_factor;
  config.rope_scaling.high_freq_factor = c.rope_high_freq_factor;
  config.rope_scaling.original_max_position_embeddings = c.rope_original_max_position_embeddings;
  config.tie_word_embeddings = c.tie_word_embeddings != 0;
  config.attention_bias = c.attention_bias != 0;
  config.qk_norm = c.qk_norm != 0;
  require(c.bos_token_id >= -1,
          prefix + "bos_token_id is " + std::to_string(c.bos_token_id) + "; expected -1 (none) or a token id");
  if (c.bos_token_id >= 0) config.bos_token_id = c.bos_token_id;
  require(c.num_eos_token_ids >= 0 && c.num_eos_token_ids <= FP8RL_MAX_EOS_TOKEN_IDS,
          prefix + "num_eos_token_ids is " + std::to_string(c.num_eos_token_ids) + "; expected 0 to " +
              std::to_string(FP8RL_MAX_EOS_TOKEN_IDS));
  config.eos_token_ids.assign(c.eos_token_ids, c.eos_token_ids + c.num_eos_token_ids);
  config.moe = moe_config_from(c, prefix);
  model::validate(config);
  return config;
}

fp8rl_model_config to_public(const model::ModelConfig& config) {
  fp8rl_model_config c = default_model_config();
  c.family = static_cast<fp8rl_model_family>(config.family);
  c.vocab_size = config.vocab_size;
  c.hidden_size = config.hidden_size;
  c.num_layers = config.num_layers;
  c.num_attention_heads = config.num_attention_heads;
  c.num_key_value_heads = config.num_key_value_heads;
  c.head_dim = config.head_dim_explicit ? config.head_dim : 0;
  c.intermediate_size = config.intermediate_size;
  c.max_position_embeddings = config.max_position_embeddings;
  c.rms_norm_eps = config.rms_norm_eps;
  c.rope_theta = config.rope_theta;
  c.rope_scaling = static_cast<fp8rl_rope_scaling>(config.rope_scaling.type);
  c.rope_factor = config.rope_scaling.factor;
  c.rope_low_freq_factor = config.rope_scaling.low_freq_factor;
  c.rope_high_freq_factor = config.rope_scaling.high_freq_factor;
  c.rope_original_max_position_embeddings = config.rope_scaling.original_max_position_embeddings;
  c.tie_word_embeddings = config.tie_word_embeddings ? 1 : 0;
  c.attention_bias = config.attention_bias ? 1 : 0;
  c.qk_norm = config.qk_norm ? 1 : 0;
  c.bos_token_id = config.bos_token_id.value_or(-1);
  if (config.eos_token_ids.size() > FP8RL_MAX_EOS_TOKEN_IDS) {
    fail(Status::unsupported, "the model has " + std::to_string(config.eos_token_ids.size()) +
                                  " EOS token ids; fp8rl_model_config holds at most " +
                                  std::to_string(FP8RL_MAX_EOS_TOKEN_IDS));
  }
  for (size_t i = 0; i < config.eos_token_ids.size(); ++i) c.eos_token_ids[i] = config.eos_token_ids[i];
  c.num_eos_token_ids = static_cast<int32_t>(config.eos_token_ids.size());
  moe_config_to(config.moe, c);
  return c;
}

}  // namespace fp8rl::capi

using namespace fp8rl::capi;

extern "C" {

FP8RL_API fp8rl_status fp8rl_model_config_init(fp8rl_model_config* config) {
  return guarded(__func__, [&] {
    fp8rl::require(config != nullptr, "config is NULL");
    *config = default_model_config();
  });
}

FP8RL_API fp8rl_status fp8rl_model_config_parameter_count(const fp8rl_model_config* config, int64_t* out_count) {
  return guarded(__func__, [&] {
    const fp8rl::model::ModelConfig model_config = model_config_from(config, "config");
    fp8rl::require(out_count != nullptr, "out_count is NULL");
    *out_count = fp8rl::model::parameter_count(model_config);
  });
}

FP8RL_API fp8rl_status fp8rl_model_config_active_parameter_count(const fp8rl_model_config* config, int64_t* out_count) {
  return guarded(__func__, [&] {
    const fp8rl::model::ModelConfig model_config = model_config_from(config, "config");
    fp8rl::require(out_count != nullptr, "out_count is NULL");
    *out_count = fp8rl::model::active_parameter_count(model_config);
  });
}

}  // extern "C"
