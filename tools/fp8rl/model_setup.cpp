#include "model_setup.h"

#include "tokenizer.h"

namespace fp8rl_cli {

namespace {

constexpr const char* kHeadSuffix = "-head";

bool ends_with_head(const std::string& name) {
  const std::string suffix = kHeadSuffix;
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const std::vector<std::string>& recipe_names() {
  static const std::vector<std::string> names{"bf16",           "fp8",      "fp8-kv",     "fp8-gen",
                                              "fp8-gen-linear", "fp8-head", "fp8-kv-head"};
  return names;
}

std::string recipe_choices() {
  std::string text;
  for (const std::string& name : recipe_names()) text += (text.empty() ? "" : "|") + name;
  return text;
}

fp8rl_recipe generator_recipe(const std::string& name) {
  fp8rl_recipe recipe;
  check(fp8rl_recipe_init(&recipe), "fp8rl_recipe_init");
  if (name == "bf16") return recipe;
  recipe.linear = FP8RL_PRECISION_FP8;
  if (name == "fp8-kv" || name == "fp8-gen" || name == "fp8-kv-head") {
    recipe.kv_cache = FP8RL_PRECISION_FP8;
    recipe.attention = FP8RL_PRECISION_FP8;
  }
  if (ends_with_head(name)) recipe.head = FP8RL_PRECISION_FP8;
  return recipe;
}

bool generates_apart(const std::string& name) { return name == "fp8-gen" || name == "fp8-gen-linear"; }

fp8rl_recipe learner_recipe(const std::string& name) {
  return generates_apart(name) ? generator_recipe("bf16") : generator_recipe(name);
}

fp8rl_model_config builtin_config(const ModelShape& shape, int64_t vocab_size) {
  fp8rl_model_config config;
  check(fp8rl_model_config_init(&config), "fp8rl_model_config_init");
  config.family = FP8RL_MODEL_FAMILY_LLAMA;
  config.vocab_size = vocab_size;
  config.hidden_size = shape.hidden;
  config.num_layers = shape.layers;
  config.num_attention_heads = shape.heads;
  config.num_key_value_heads = shape.kv_heads;
  config.intermediate_size = shape.intermediate;
  config.max_position_embeddings = shape.max_positions;
  if (shape.experts > 0) {  // Qwen3-MoE: Qwen3 attention (q/k head norms), every layer sparse
    config.family = FP8RL_MODEL_FAMILY_QWEN3_MOE;
    config.qk_norm = 1;
    config.num_experts = shape.experts;
    config.num_experts_per_tok = shape.experts_per_token;
    config.moe_intermediate_size = shape.moe_intermediate;
    config.norm_topk_prob = 1;        // as Qwen3-30B-A3B
    config.router_aux_loss_coef = 0;  // RL keeps the load-balancing loss off (it perturbs log-probs)
  }
  config.bos_token_id = Tokenizer::kBos;
  config.eos_token_ids[0] = Tokenizer::kEos;
  config.num_eos_token_ids = 1;
  return config;
}

Policy create_random_policy(const Context& context, const fp8rl_model_config& config, uint64_t seed) {
  fp8rl_policy* handle = nullptr;
  check(fp8rl_policy_create_random(context.get(), &config, seed, &handle), "fp8rl_policy_create_random");
  return Policy(handle);
}

Policy load_policy(const Context& context, const std::string& folder) {
  fp8rl_policy* handle = nullptr;
  check(fp8rl_policy_load(context.get(), folder.c_str(), &handle), "fp8rl_policy_load");
  return Policy(handle);
}

fp8rl_model_config policy_config(const Policy& policy) {
  fp8rl_model_config config;
  check(fp8rl_model_config_init(&config), "fp8rl_model_config_init");
  check(fp8rl_policy_get_config(policy.get(), &config), "fp8rl_policy_get_config");
  return config;
}

void set_recipe(const Policy& policy, const fp8rl_recipe& recipe) {
  check(fp8rl_policy_set_recipe(policy.get(), &recipe), "fp8rl_policy_set_recipe");
}

}  // namespace fp8rl_cli
