// Tiny random policies and helpers shared by the policy and rollout tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/model/model_params.h"
#include "core/policy/policy.h"
#include "core/rollout/rollout.h"

namespace fp8rl::test {

// Sizes are deliberately not multiples of 128: partial quantization blocks
// everywhere (hidden 160 = 128 + 32, intermediate 200, q_dim 192).
inline model::ModelConfig tiny_llama() {
  model::ModelConfig c;
  c.family = model::ModelFamily::llama;
  c.vocab_size = 301;
  c.hidden_size = 160;
  c.num_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 40;
  c.intermediate_size = 200;
  c.max_position_embeddings = 96;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  c.rope_scaling.type = model::RopeScalingType::llama3;
  c.rope_scaling.factor = 8.0;
  c.rope_scaling.low_freq_factor = 1.0;
  c.rope_scaling.high_freq_factor = 4.0;
  c.rope_scaling.original_max_position_embeddings = 32;
  c.eos_token_ids = {300};
  return c;
}

inline model::ModelConfig tiny_qwen2() {
  model::ModelConfig c = tiny_llama();
  c.family = model::ModelFamily::qwen2;
  c.attention_bias = true;
  c.tie_word_embeddings = true;
  c.rope_scaling = model::RopeScaling{};
  return c;
}

inline model::ModelConfig tiny_qwen3() {
  model::ModelConfig c = tiny_llama();
  c.family = model::ModelFamily::qwen3;
  c.qk_norm = true;
  c.head_dim = 48;  // q_dim 192 != hidden 160
  c.head_dim_explicit = true;
  c.rope_scaling = model::RopeScaling{};
  return c;
}

struct NamedConfig {
  const char* name;
  model::ModelConfig config;
};

inline std::vector<NamedConfig> tiny_configs() {
  return {{"llama", tiny_llama()}, {"qwen2", tiny_qwen2()}, {"qwen3", tiny_qwen3()}};
}

// Qwen3-MoE: 6 experts of width 72 (a partial 128-block), top-2 renormalized;
// layer 1 dense through mlp_only_layers.
inline model::ModelConfig tiny_qwen3_moe() {
  model::ModelConfig c = tiny_qwen3();
  c.family = model::ModelFamily::qwen3_moe;
  c.moe.num_experts = 6;
  c.moe.num_experts_per_tok = 2;
  c.moe.moe_intermediate_size = 72;
  c.moe.norm_topk_prob = true;
  c.moe.mlp_only_layers = {1};
  return c;
}

// Every expert of every other layer taken (k == experts), weights not
// renormalized; decoder_sparse_step 2 makes layers 1 sparse, 0 and 2 dense.
inline model::ModelConfig tiny_qwen3_moe_all_experts() {
  model::ModelConfig c = tiny_qwen3_moe();
  c.moe.num_experts = 3;
  c.moe.num_experts_per_tok = 3;
  c.moe.moe_intermediate_size = 136;
  c.moe.norm_topk_prob = false;
  c.moe.mlp_only_layers = {};
  c.moe.decoder_sparse_step = 2;
  return c;
}

// The dense families and the Mixture-of-Experts variants: what the forward
// pass and generation are tested on (training takes tiny_configs()).
inline std::vector<NamedConfig> forward_configs() {
  std::vector<NamedConfig> configs = tiny_configs();
  configs.push_back({"qwen3_moe", tiny_qwen3_moe()});
  configs.push_back({"qwen3_moe_all_experts", tiny_qwen3_moe_all_experts()});
  return configs;
}

// Larger init than Hugging Face's 0.02 so that a random tiny model has
// peaked, position-dependent distributions (a flat one would hide errors).
inline model::ModelParams tiny_params(const model::ModelConfig& config, uint64_t seed = 11) {
  model::RandomInitOptions options;
  options.std = 0.08f;
  options.perturb_norms_and_biases = true;
  return model::random_model_params(config, seed, options);
}

struct NamedRecipe {
  const char* name;
  policy::Recipe recipe;
};

inline std::vector<NamedRecipe> all_recipes() {
  using policy::Precision;
  std::vector<NamedRecipe> recipes;
  policy::Recipe r;
  recipes.push_back({"bf16", r});
  r.linear = Precision::fp8;
  recipes.push_back({"fp8", r});
  r.scale_format = ScaleFormat::pow2;
  recipes.push_back({"fp8-pow2", r});
  r.scale_format = ScaleFormat::fp32;
  r.kv_cache = Precision::fp8;
  recipes.push_back({"fp8-kv", r});
  r.attention = Precision::fp8;
  recipes.push_back({"fp8-kv-attention", r});
  r.bf16_first_layers = 1;
  r.bf16_last_layers = 1;
  recipes.push_back({"fp8-kv-attention-bf16-edges", r});
  policy::Recipe head;  // the LM head in FP8 too, its own blocks partial (vocab 301, hidden 160)
  head.linear = Precision::fp8;
  head.head = Precision::fp8;
  recipes.push_back({"fp8-head", head});
  return recipes;
}

// Scales that matter: K and V values of the tiny models are O(1), so 1/16
// puts them high in the E4M3 range instead of at scale 1.
inline policy::AttentionScales test_scales(int64_t layers) {
  policy::AttentionScales scales;
  for (int64_t i = 0; i < layers; ++i) {
    scales.q.push_back(0.0625f + 0.01f * static_cast<float>(i));
    scales.k.push_back(0.03125f + 0.005f * static_cast<float>(i));
    scales.v.push_back(0.02f);
  }
  return scales;
}

// Owns a flat batch of sequences and the view the core takes.
struct FlatSequences {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};

  void add(const std::vector<int32_t>& sequence) {
    tokens.insert(tokens.end(), sequence.begin(), sequence.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  rollout::TokenSequences view() const {
    return rollout::TokenSequences{tokens.data(), offsets.data(), static_cast<int64_t>(offsets.size()) - 1};
  }
};

// Deterministic prompts of the given lengths, ids in [0, vocab - 1) (the
// last id is the tiny configs' EOS).
inline FlatSequences test_prompts(const std::vector<int64_t>& lengths, int64_t vocab, uint32_t salt = 0) {
  FlatSequences prompts;
  uint32_t state = 12345u + salt;
  for (int64_t length : lengths) {
    std::vector<int32_t> prompt;
    for (int64_t i = 0; i < length; ++i) {
      state = state * 1664525u + 1013904223u;
      prompt.push_back(static_cast<int32_t>((state >> 8) % static_cast<uint32_t>(vocab - 1)));
    }
    prompts.add(prompt);
  }
  return prompts;
}

inline BackendRequest cpu_request(int threads) { return BackendRequest{BackendChoice::cpu, threads, 0}; }

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace fp8rl::test
