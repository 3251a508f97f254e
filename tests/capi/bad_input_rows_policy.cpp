// Rows of the bad-input table: the init functions, contexts, model configs,
// policies, generation, scoring, calibration and rollouts.
#include <memory>
#include <tuple>

#include "capi/bad_input_table.h"

namespace capi_test::bad_input {

void init_functions(Table& t) {
  t.invalid("fp8rl_context_options_init", "NULL", "options", [] { return fp8rl_context_options_init(nullptr); });
  t.invalid("fp8rl_model_config_init", "NULL", "config", [] { return fp8rl_model_config_init(nullptr); });
  t.invalid("fp8rl_recipe_init", "NULL", "recipe", [] { return fp8rl_recipe_init(nullptr); });
  t.invalid("fp8rl_memory_report_init", "NULL", "report", [] { return fp8rl_memory_report_init(nullptr); });
  t.invalid("fp8rl_calibration_options_init", "NULL", "options",
            [] { return fp8rl_calibration_options_init(nullptr); });
  t.invalid("fp8rl_sampling_options_init", "NULL", "options", [] { return fp8rl_sampling_options_init(nullptr); });
  t.invalid("fp8rl_importance_options_init", "NULL", "options", [] { return fp8rl_importance_options_init(nullptr); });
  t.invalid("fp8rl_mismatch_metrics_init", "NULL", "metrics", [] { return fp8rl_mismatch_metrics_init(nullptr); });
  t.invalid("fp8rl_trainer_options_init", "NULL", "options", [] { return fp8rl_trainer_options_init(nullptr); });
  t.invalid("fp8rl_train_batch_init", "NULL", "batch", [] { return fp8rl_train_batch_init(nullptr); });
  t.invalid("fp8rl_train_metrics_init", "NULL", "metrics", [] { return fp8rl_train_metrics_init(nullptr); });
  t.invalid("fp8rl_quantize_options_init", "NULL", "options", [] { return fp8rl_quantize_options_init(nullptr); });
}

void context_functions(Table& t, World& w) {
  Outs& o = w.outs;
  fp8rl_context_options valid;
  REQUIRE(fp8rl_context_options_init(&valid) == FP8RL_OK);
  valid.backend = FP8RL_BACKEND_CPU;
  const std::function<fp8rl_status(const fp8rl_context_options&)> create = [&o](const fp8rl_context_options& options) {
    return fp8rl_context_create(&options, &o.context);
  };
  t.invalid("fp8rl_context_create", "options NULL", "options",
            [&o] { return fp8rl_context_create(nullptr, &o.context); });
  t.invalid("fp8rl_context_create", "out_context NULL", "out_context",
            [valid] { return fp8rl_context_create(&valid, nullptr); });
  t.struct_sizes("fp8rl_context_create", "options->struct_size", valid, create);
  t.enums("fp8rl_context_create", "options->backend", valid, &fp8rl_context_options::backend, create);
  t.enums("fp8rl_context_create", "options->log_level", valid, &fp8rl_context_options::log_level, create);
  fp8rl_context_options threads = valid;
  threads.num_threads = -1;
  t.invalid("fp8rl_context_create", "num_threads -1", "options->num_threads",
            [create, threads] { return create(threads); });
  fp8rl_context_options device = valid;
  device.cuda_device = -1;
  t.invalid("fp8rl_context_create", "cuda_device -1", "options->cuda_device",
            [create, device] { return create(device); });

  fp8rl_context* c = w.context.get();
  t.invalid("fp8rl_context_destroy", "a context a policy still uses", "polic",
            [c] { return fp8rl_context_destroy(c); });
  t.invalid("fp8rl_context_get_backend", "context NULL", "context",
            [&o] { return fp8rl_context_get_backend(nullptr, &o.backend); });
  t.invalid("fp8rl_context_get_backend", "out NULL", "out_backend",
            [c] { return fp8rl_context_get_backend(c, nullptr); });
  t.invalid("fp8rl_context_get_num_threads", "context NULL", "context",
            [&o] { return fp8rl_context_get_num_threads(nullptr, &o.num_threads); });
  t.invalid("fp8rl_context_get_num_threads", "out NULL", "out_num_threads",
            [c] { return fp8rl_context_get_num_threads(c, nullptr); });
  t.invalid("fp8rl_context_get_description", "context NULL", "context",
            [&o] { return fp8rl_context_get_description(nullptr, &o.description); });
  t.invalid("fp8rl_context_get_description", "out NULL", "out_description",
            [c] { return fp8rl_context_get_description(c, nullptr); });
  t.invalid("fp8rl_build_features", "NULL", "out_features", [] { return fp8rl_build_features(nullptr); });
}

namespace {

// The Mixture-of-Experts fields: on the dense family `valid` is, and on a
// qwen3_moe config made from it.
void bad_moe_fields(Table& t, const std::string& function, const fp8rl_model_config& valid,
                    const std::function<fp8rl_status(const fp8rl_model_config&)>& call) {
  fp8rl_model_config dense = valid;
  dense.num_experts = 4;
  t.invalid(function, "num_experts on a dense family", "num_experts", [call, dense] { return call(dense); });
  fp8rl_model_config moe = valid;
  moe.family = FP8RL_MODEL_FAMILY_QWEN3_MOE;
  moe.qk_norm = 1;
  moe.num_experts = 4;
  moe.num_experts_per_tok = 2;
  moe.moe_intermediate_size = 8;
  const std::vector<std::pair<std::string, std::function<void(fp8rl_model_config&)>>> bad = {
      {"num_experts_per_tok", [](fp8rl_model_config& c) { c.num_experts_per_tok = 5; }},
      {"num_experts", [](fp8rl_model_config& c) { c.num_experts = kHugeCount; }},
      {"moe_intermediate_size", [](fp8rl_model_config& c) { c.moe_intermediate_size = -1; }},
      {"decoder_sparse_step", [](fp8rl_model_config& c) { c.decoder_sparse_step = 0; }},
      {"num_mlp_only_layers", [](fp8rl_model_config& c) { c.num_mlp_only_layers = -1; }},
      {"num_mlp_only_layers", [](fp8rl_model_config& c) { c.num_mlp_only_layers = FP8RL_MAX_MLP_ONLY_LAYERS + 1; }},
      {"mlp_only_layers[0]", [](fp8rl_model_config& c) { c.num_mlp_only_layers = 1, c.mlp_only_layers[0] = -1; }},
  };
  for (const auto& [name, spoil] : bad) {
    fp8rl_model_config config = moe;
    spoil(config);
    t.invalid(function, "moe " + name, name, [call, config] { return call(config); });
  }
  t.non_finite(function, "config->router_aux_loss_coef", moe, &fp8rl_model_config::router_aux_loss_coef, call);
}

// Fields of a model config, each made invalid in turn, for any call that takes one.
void bad_configs(Table& t, const std::string& function, const fp8rl_model_config& valid,
                 const std::function<fp8rl_status(const fp8rl_model_config&)>& call) {
  t.struct_sizes(function, "config->struct_size", valid, call);
  t.enums(function, "config->family", valid, &fp8rl_model_config::family, call);
  t.enums(function, "config->rope_scaling", valid, &fp8rl_model_config::rope_scaling, call);
  t.non_finite(function, "config->rms_norm_eps", valid, &fp8rl_model_config::rms_norm_eps, call);
  t.non_finite(function, "config->rope_theta", valid, &fp8rl_model_config::rope_theta, call);
  // Messages name a field by its config.json key (num_layers is num_hidden_layers there).
  const std::vector<std::pair<std::string, int64_t fp8rl_model_config::*>> sizes = {
      {"vocab_size", &fp8rl_model_config::vocab_size},
      {"hidden_size", &fp8rl_model_config::hidden_size},
      {"num_hidden_layers", &fp8rl_model_config::num_layers},
      {"num_attention_heads", &fp8rl_model_config::num_attention_heads},
      {"num_key_value_heads", &fp8rl_model_config::num_key_value_heads},
      {"intermediate_size", &fp8rl_model_config::intermediate_size},
      {"max_position_embeddings", &fp8rl_model_config::max_position_embeddings}};
  for (const auto& [name, member] : sizes)
    for (const int64_t bad : {int64_t{0}, int64_t{-1}, kHugeCount}) {
      fp8rl_model_config config = valid;
      config.*member = bad;
      t.invalid(function, name + " = " + std::to_string(bad), name, [call, config] { return call(config); });
    }
  fp8rl_model_config head_dim = valid;
  head_dim.head_dim = -1;
  t.invalid(function, "head_dim -1", "head_dim", [call, head_dim] { return call(head_dim); });
  fp8rl_model_config eos = valid;
  eos.num_eos_token_ids = -1;
  t.invalid(function, "num_eos_token_ids -1", "num_eos_token_ids", [call, eos] { return call(eos); });
  eos.num_eos_token_ids = FP8RL_MAX_EOS_TOKEN_IDS + 1;
  t.invalid(function, "num_eos_token_ids too many", "num_eos_token_ids", [call, eos] { return call(eos); });
  eos.num_eos_token_ids = 1;
  eos.eos_token_ids[0] = valid.vocab_size;
  t.invalid(function, "eos id = vocab_size", "eos_token_id", [call, eos] { return call(eos); });
  bad_moe_fields(t, function, valid, call);
}

// Fields of a recipe, each made invalid in turn, for any call that takes one.
void bad_recipes(Table& t, const std::string& function, const fp8rl_recipe& valid,
                 const std::function<fp8rl_status(const fp8rl_recipe&)>& call) {
  t.struct_sizes(function, "recipe->struct_size", valid, call);
  t.enums(function, "recipe->linear", valid, &fp8rl_recipe::linear, call);
  t.enums(function, "recipe->kv_cache", valid, &fp8rl_recipe::kv_cache, call);
  t.enums(function, "recipe->attention", valid, &fp8rl_recipe::attention, call);
  t.enums(function, "recipe->scale_format", valid, &fp8rl_recipe::scale_format, call);
  t.enums(function, "recipe->head", valid, &fp8rl_recipe::head, call);
  // More BF16 layers than the model has keeps them all BF16: not an error.
  fp8rl_recipe layers = valid;
  layers.bf16_first_layers = -1;
  t.invalid(function, "bf16_first_layers -1", "bf16_first_layers", [call, layers] { return call(layers); });
  layers = valid;
  layers.bf16_last_layers = -1;
  t.invalid(function, "bf16_last_layers -1", "bf16_last_layers", [call, layers] { return call(layers); });
  fp8rl_recipe attention = valid;
  attention.attention = FP8RL_PRECISION_FP8;
  t.invalid(function, "FP8 attention over a BF16 KV cache", "KV cache", [call, attention] { return call(attention); });
}

}  // namespace

void model_functions(Table& t, World& w) {
  Outs& o = w.outs;
  fp8rl_context* c = w.context.get();
  const fp8rl_model_config valid = w.config;
  t.invalid("fp8rl_model_config_parameter_count", "config NULL", "config",
            [&o] { return fp8rl_model_config_parameter_count(nullptr, &o.count); });
  t.invalid("fp8rl_model_config_parameter_count", "out NULL", "out_count",
            [valid] { return fp8rl_model_config_parameter_count(&valid, nullptr); });
  bad_configs(t, "fp8rl_model_config_parameter_count", valid,
              [&o](const fp8rl_model_config& config) { return fp8rl_model_config_parameter_count(&config, &o.count); });
  t.invalid("fp8rl_model_config_active_parameter_count", "config NULL", "config",
            [&o] { return fp8rl_model_config_active_parameter_count(nullptr, &o.count); });
  t.invalid("fp8rl_model_config_active_parameter_count", "out NULL", "out_count",
            [valid] { return fp8rl_model_config_active_parameter_count(&valid, nullptr); });
  bad_configs(t, "fp8rl_model_config_active_parameter_count", valid, [&o](const fp8rl_model_config& config) {
    return fp8rl_model_config_active_parameter_count(&config, &o.count);
  });

  t.invalid("fp8rl_policy_create_random", "context NULL", "context",
            [&o, valid] { return fp8rl_policy_create_random(nullptr, &valid, 1, &o.policy); });
  t.invalid("fp8rl_policy_create_random", "config NULL", "config",
            [&o, c] { return fp8rl_policy_create_random(c, nullptr, 1, &o.policy); });
  t.invalid("fp8rl_policy_create_random", "out NULL", "out_policy",
            [c, valid] { return fp8rl_policy_create_random(c, &valid, 1, nullptr); });
  bad_configs(t, "fp8rl_policy_create_random", valid, [&o, c](const fp8rl_model_config& config) {
    return fp8rl_policy_create_random(c, &config, 1, &o.policy);
  });

  const std::function<fp8rl_status(const fp8rl_model_config&, const fp8rl_recipe*, int32_t, int32_t, int64_t)> plan =
      [&o](const fp8rl_model_config& config, const fp8rl_recipe* recipe, int32_t world, int32_t rank, int64_t tokens) {
        return fp8rl_memory_plan(&config, recipe, world, rank, tokens, &o.report);
      };
  t.invalid("fp8rl_memory_plan", "config NULL", "config",
            [&o] { return fp8rl_memory_plan(nullptr, nullptr, 1, 0, 0, &o.report); });
  t.invalid("fp8rl_memory_plan", "out NULL", "out_report",
            [valid] { return fp8rl_memory_plan(&valid, nullptr, 1, 0, 0, nullptr); });
  t.add("fp8rl_memory_plan", "out_report->struct_size 0", FP8RL_ERROR_VERSION_MISMATCH, "out_report->struct_size",
        [&o, valid] {
          o.report.struct_size = 0;
          const fp8rl_status status = fp8rl_memory_plan(&valid, nullptr, 1, 0, 0, &o.report);
          o.report.struct_size = sizeof o.report;  // as reset() left it, for the comparison
          return status;
        });
  bad_configs(t, "fp8rl_memory_plan", valid,
              [plan](const fp8rl_model_config& config) { return plan(config, nullptr, 1, 0, 0); });
  fp8rl_recipe recipe;
  REQUIRE(fp8rl_recipe_init(&recipe) == FP8RL_OK);
  bad_recipes(t, "fp8rl_memory_plan", recipe,
              [plan, valid](const fp8rl_recipe& r) { return plan(valid, &r, 1, 0, 0); });
  for (const int32_t world : {0, -1, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()})
    t.invalid("fp8rl_memory_plan", "world_size " + std::to_string(world), "world_size",
              [plan, valid, world] { return plan(valid, nullptr, world, 0, 0); });
  for (const int32_t rank : {-1, 4, std::numeric_limits<int32_t>::min()})
    t.invalid("fp8rl_memory_plan", "rank " + std::to_string(rank) + " of 4", "rank",
              [plan, valid, rank] { return plan(valid, nullptr, 4, rank, 0); });
  for (const int64_t tokens : {int64_t{-1}, kHugeCount, std::numeric_limits<int64_t>::max()})
    t.invalid("fp8rl_memory_plan", "kv_cache_tokens " + std::to_string(tokens), "kv_cache_tokens",
              [plan, valid, tokens] { return plan(valid, nullptr, 1, 0, tokens); });

  t.invalid("fp8rl_policy_load", "context NULL", "context",
            [&o, &w] { return fp8rl_policy_load(nullptr, w.scratch.path("folder").c_str(), &o.policy); });
  t.invalid("fp8rl_policy_load", "folder NULL", "folder", [&o, c] { return fp8rl_policy_load(c, nullptr, &o.policy); });
  t.invalid("fp8rl_policy_load", "out NULL", "out_policy",
            [c, &w] { return fp8rl_policy_load(c, w.scratch.path("folder").c_str(), nullptr); });
  for (const Scratch::SpecialPath& special : w.scratch.unreadable_folders())
    t.add("fp8rl_policy_load", special.what, special.expected, special.names,
          [&o, c, path = special.path] { return fp8rl_policy_load(c, path.c_str(), &o.policy); });
}

void policy_functions(Table& t, World& w) {
  Outs& o = w.outs;
  fp8rl_policy* p = w.policy.get();
  fp8rl_policy* other = w.other.get();

  t.invalid("fp8rl_policy_save", "policy NULL", "policy",
            [&w] { return fp8rl_policy_save(nullptr, w.scratch.path("saved").c_str(), FP8RL_DTYPE_BF16); });
  t.invalid("fp8rl_policy_save", "folder NULL", "folder",
            [p] { return fp8rl_policy_save(p, nullptr, FP8RL_DTYPE_BF16); });
  for (const int32_t raw : kBadEnums)
    t.invalid("fp8rl_policy_save", "dtype " + std::to_string(raw), "dtype", [p, raw, &w] {
      fp8rl_dtype dtype;
      std::memcpy(&dtype, &raw, sizeof raw);
      return fp8rl_policy_save(p, w.scratch.path("saved").c_str(), dtype);
    });
  t.invalid("fp8rl_policy_save", "dtype E4M3", "dtype",
            [p, &w] { return fp8rl_policy_save(p, w.scratch.path("saved").c_str(), FP8RL_DTYPE_E4M3); });
  for (const Scratch::SpecialPath& special : w.scratch.unwritable_folders()) {
    t.add("fp8rl_policy_save", special.what, special.expected, special.names,
          [p, path = special.path] { return fp8rl_policy_save(p, path.c_str(), FP8RL_DTYPE_BF16); });
    t.add("fp8rl_policy_export_fp8", special.what, special.expected, special.names,
          [p, path = special.path] { return fp8rl_policy_export_fp8(p, path.c_str()); });
  }
  t.invalid("fp8rl_policy_export_fp8", "policy NULL", "policy",
            [&w] { return fp8rl_policy_export_fp8(nullptr, w.scratch.path("fp8").c_str()); });
  t.invalid("fp8rl_policy_export_fp8", "folder NULL", "folder", [p] { return fp8rl_policy_export_fp8(p, nullptr); });

  t.invalid("fp8rl_policy_destroy", "a policy a trainer still trains", "trainer",
            [p] { return fp8rl_policy_destroy(p); });
  t.invalid("fp8rl_policy_get_config", "policy NULL", "policy",
            [&o] { return fp8rl_policy_get_config(nullptr, &o.config); });
  t.invalid("fp8rl_policy_get_config", "out NULL", "out_config", [p] { return fp8rl_policy_get_config(p, nullptr); });
  t.invalid("fp8rl_policy_parameter_count", "policy NULL", "policy",
            [&o] { return fp8rl_policy_parameter_count(nullptr, &o.count); });
  t.invalid("fp8rl_policy_parameter_count", "out NULL", "out_count",
            [p] { return fp8rl_policy_parameter_count(p, nullptr); });
  t.invalid("fp8rl_policy_memory", "policy NULL", "policy", [&o] { return fp8rl_policy_memory(nullptr, &o.report); });
  t.invalid("fp8rl_policy_memory", "out NULL", "out_report", [p] { return fp8rl_policy_memory(p, nullptr); });
  t.add("fp8rl_policy_memory", "out_report->struct_size 0", FP8RL_ERROR_VERSION_MISMATCH, "out_report->struct_size",
        [&o, p] {
          o.report.struct_size = 0;
          const fp8rl_status status = fp8rl_policy_memory(p, &o.report);
          o.report.struct_size = sizeof o.report;  // as reset() left it, for the comparison
          return status;
        });

  t.invalid("fp8rl_policy_copy_weights", "destination NULL", "destination",
            [p] { return fp8rl_policy_copy_weights(nullptr, p); });
  t.invalid("fp8rl_policy_copy_weights", "source NULL", "source",
            [p] { return fp8rl_policy_copy_weights(p, nullptr); });
  t.invalid("fp8rl_policy_copy_weights", "another architecture", "architecture",
            [p, other] { return fp8rl_policy_copy_weights(p, other); });
  t.invalid("fp8rl_policy_copy_weights", "itself", "same policy", [p] { return fp8rl_policy_copy_weights(p, p); });

  fp8rl_recipe recipe;
  REQUIRE(fp8rl_recipe_init(&recipe) == FP8RL_OK);
  const std::function<fp8rl_status(const fp8rl_recipe&)> set = [p](const fp8rl_recipe& r) {
    return fp8rl_policy_set_recipe(p, &r);
  };
  t.invalid("fp8rl_policy_set_recipe", "policy NULL", "policy",
            [recipe] { return fp8rl_policy_set_recipe(nullptr, &recipe); });
  t.invalid("fp8rl_policy_set_recipe", "recipe NULL", "recipe", [p] { return fp8rl_policy_set_recipe(p, nullptr); });
  bad_recipes(t, "fp8rl_policy_set_recipe", recipe, set);
  t.invalid("fp8rl_policy_get_recipe", "policy NULL", "policy",
            [&o] { return fp8rl_policy_get_recipe(nullptr, &o.recipe); });
  t.invalid("fp8rl_policy_get_recipe", "out NULL", "out_recipe", [p] { return fp8rl_policy_get_recipe(p, nullptr); });

  const float* q = w.q_scales.data();
  t.invalid("fp8rl_policy_set_attention_scales", "policy NULL", "policy",
            [q] { return fp8rl_policy_set_attention_scales(nullptr, q, q, q, 2); });
  t.invalid("fp8rl_policy_set_attention_scales", "q NULL", "q",
            [p, q] { return fp8rl_policy_set_attention_scales(p, nullptr, q, q, 2); });
  t.invalid("fp8rl_policy_set_attention_scales", "k NULL", "k",
            [p, q] { return fp8rl_policy_set_attention_scales(p, q, nullptr, q, 2); });
  t.invalid("fp8rl_policy_set_attention_scales", "v NULL", "v",
            [p, q] { return fp8rl_policy_set_attention_scales(p, q, q, nullptr, 2); });
  for (const int64_t layers : {int64_t{0}, int64_t{-1}, int64_t{3}, kHugeCount})
    t.invalid("fp8rl_policy_set_attention_scales", "num_layers " + std::to_string(layers), "num_layers",
              [p, q, layers] { return fp8rl_policy_set_attention_scales(p, q, q, q, layers); });
  for (const float bad : {kNaN, kInf, -kInf, 0.0f, -1.0f})
    for (int which = 0; which < 3; ++which) {
      const char* name = which == 0 ? "q" : which == 1 ? "k" : "v";
      t.invalid("fp8rl_policy_set_attention_scales", std::string(name) + "[1] = " + std::to_string(bad), name,
                [p, bad, which] {
                  float good[2] = {0.5f, 0.5f}, spoiled[2] = {0.5f, bad};
                  return fp8rl_policy_set_attention_scales(p, which == 0 ? spoiled : good, which == 1 ? spoiled : good,
                                                           which == 2 ? spoiled : good, 2);
                });
    }
  t.invalid("fp8rl_policy_get_attention_scales", "policy NULL", "policy",
            [&o] { return fp8rl_policy_get_attention_scales(nullptr, o.q, o.k, o.v, 2); });
  t.invalid("fp8rl_policy_get_attention_scales", "q NULL", "q",
            [&o, p] { return fp8rl_policy_get_attention_scales(p, nullptr, o.k, o.v, 2); });
  t.invalid("fp8rl_policy_get_attention_scales", "num_layers 1", "num_layers",
            [&o, p] { return fp8rl_policy_get_attention_scales(p, o.q, o.k, o.v, 1); });
  t.invalid("fp8rl_policy_get_attention_scales", "num_layers -1", "num_layers",
            [&o, p] { return fp8rl_policy_get_attention_scales(p, o.q, o.k, o.v, -1); });
}

void bad_sequences(Table& t, const std::string& function, const std::vector<int32_t>& tokens,
                   const std::vector<int64_t>& offsets, int64_t vocab,
                   const std::function<fp8rl_status(const int32_t*, const int64_t*, int64_t)>& call,
                   const std::string& tokens_name, const std::string& offsets_name, const std::string& count_name) {
  const int64_t count = static_cast<int64_t>(offsets.size()) - 1;
  t.invalid(function, tokens_name + " NULL", tokens_name,
            [call, offsets, count] { return call(nullptr, offsets.data(), count); });
  t.invalid(function, offsets_name + " NULL", offsets_name,
            [call, tokens, count] { return call(tokens.data(), nullptr, count); });
  // (A count larger than the arrays cannot be told from them: it is not in the table.)
  for (const int64_t bad : {int64_t{0}, int64_t{-1}})
    t.invalid(function, count_name + " " + std::to_string(bad), count_name,
              [call, tokens, offsets, bad] { return call(tokens.data(), offsets.data(), bad); });
  for (const int32_t bad : {int32_t{-1}, static_cast<int32_t>(vocab)}) {
    std::vector<int32_t> spoiled = tokens;
    spoiled[1] = bad;
    t.invalid(function, "a token id " + std::to_string(bad), "token id " + std::to_string(bad),
              [call, spoiled, offsets, count] { return call(spoiled.data(), offsets.data(), count); });
  }
  std::vector<int64_t> shifted = offsets;
  shifted[0] = 1;
  t.invalid(function, "offsets not starting at 0", "offsets",
            [call, tokens, shifted, count] { return call(tokens.data(), shifted.data(), count); });
  std::vector<int64_t> decreasing = offsets;
  std::swap(decreasing[1], decreasing[2]);
  t.invalid(function, "decreasing offsets", "offsets",
            [call, tokens, decreasing, count] { return call(tokens.data(), decreasing.data(), count); });
  std::vector<int64_t> negative = offsets;
  negative[1] = -5;
  t.invalid(function, "a negative offset", "offsets",
            [call, tokens, negative, count] { return call(tokens.data(), negative.data(), count); });
}

namespace {

// Fields of sampling options, each made invalid in turn.
void bad_sampling(Table& t, const std::string& function, const fp8rl_sampling_options& valid,
                  const std::function<fp8rl_status(const fp8rl_sampling_options&)>& call) {
  t.struct_sizes(function, "options->struct_size", valid, call);
  t.non_finite(function, "options->temperature", valid, &fp8rl_sampling_options::temperature, call);
  t.non_finite(function, "options->top_p", valid, &fp8rl_sampling_options::top_p, call);
  const auto with = [&](const std::string& name, auto change) {
    fp8rl_sampling_options options = valid;
    change(options);
    t.invalid(function, name, bare(name.substr(0, name.find(' '))), [call, options] { return call(options); });
  };
  with("options->temperature -1", [](fp8rl_sampling_options& s) { s.temperature = -1.0f; });
  with("options->top_p 0", [](fp8rl_sampling_options& s) { s.top_p = 0.0f; });
  with("options->top_p 1.5", [](fp8rl_sampling_options& s) { s.top_p = 1.5f; });
  with("options->top_k -1", [](fp8rl_sampling_options& s) { s.top_k = -1; });
}

}  // namespace

void rollout_functions(Table& t, World& w) {
  Outs& o = w.outs;
  fp8rl_policy* p = w.policy.get();
  const fp8rl_sampling_options sampling = World::sampling_options();
  const uint64_t* seeds = w.seeds.data();
  const std::vector<int32_t>& prompts = w.prompt_tokens;
  const std::vector<int64_t>& offsets = w.prompt_offsets;

  t.invalid("fp8rl_policy_generate", "policy NULL", "policy", [&o, &w, sampling] {
    return fp8rl_policy_generate(nullptr, w.prompt_tokens.data(), w.prompt_offsets.data(), 4, w.seeds.data(), &sampling,
                                 &o.rollout);
  });
  bad_sequences(
      t, "fp8rl_policy_generate", prompts, offsets, w.config.vocab_size,
      [&o, p, seeds, sampling](const int32_t* tokens, const int64_t* offs, int64_t count) {
        return fp8rl_policy_generate(p, tokens, offs, count, seeds, &sampling, &o.rollout);
      },
      "prompt_tokens", "prompt_offsets", "num_prompts");
  t.invalid("fp8rl_policy_generate", "seeds NULL", "seeds", [&o, &w, p, sampling] {
    return fp8rl_policy_generate(p, w.prompt_tokens.data(), w.prompt_offsets.data(), 4, nullptr, &sampling, &o.rollout);
  });
  t.invalid("fp8rl_policy_generate", "options NULL", "options", [&o, &w, p] {
    return fp8rl_policy_generate(p, w.prompt_tokens.data(), w.prompt_offsets.data(), 4, w.seeds.data(), nullptr,
                                 &o.rollout);
  });
  t.invalid("fp8rl_policy_generate", "out NULL", "out_rollout", [&w, p, sampling] {
    return fp8rl_policy_generate(p, w.prompt_tokens.data(), w.prompt_offsets.data(), 4, w.seeds.data(), &sampling,
                                 nullptr);
  });
  const auto generate = [&o, &w, p](const fp8rl_sampling_options& options) {
    return fp8rl_policy_generate(p, w.prompt_tokens.data(), w.prompt_offsets.data(), 4, w.seeds.data(), &options,
                                 &o.rollout);
  };
  bad_sampling(t, "fp8rl_policy_generate", sampling, generate);
  for (const int32_t bad : {-1, 0}) {
    fp8rl_sampling_options options = sampling;
    options.max_new_tokens = bad;
    t.invalid("fp8rl_policy_generate", "max_new_tokens " + std::to_string(bad), "max_new_tokens",
              [generate, options] { return generate(options); });
  }
  fp8rl_sampling_options stops = sampling;
  stops.num_stop_token_ids = 2;
  t.invalid("fp8rl_policy_generate", "stop_token_ids NULL with a count", "stop_token_ids",
            [generate, stops] { return generate(stops); });
  static const int32_t kBadStop[] = {-1};
  stops.stop_token_ids = kBadStop;
  stops.num_stop_token_ids = 1;
  t.invalid("fp8rl_policy_generate", "a stop token -1", "stop token id -1",
            [generate, stops] { return generate(stops); });
  stops.num_stop_token_ids = -1;
  t.invalid("fp8rl_policy_generate", "num_stop_token_ids -1", "num_stop_token_ids",
            [generate, stops] { return generate(stops); });
  fp8rl_sampling_options slots = sampling;
  slots.batch_slots = -1;
  t.invalid("fp8rl_policy_generate", "batch_slots -1", "batch_slots", [generate, slots] { return generate(slots); });
  fp8rl_sampling_options step_tokens = sampling;
  step_tokens.max_tokens_per_step = 0;
  t.invalid("fp8rl_policy_generate", "max_tokens_per_step 0", "max_tokens_per_step",
            [generate, step_tokens] { return generate(step_tokens); });

  // Scoring: (tokens, offsets, count, prompt_lengths, options, logprobs, capacity).
  const auto score = [&o, &w, p, sampling](const int32_t* tokens, const int64_t* offs, int64_t count) {
    return fp8rl_policy_score(p, tokens, offs, count, w.prompt_lengths.data(), &sampling, o.logprobs, 8);
  };
  t.invalid("fp8rl_policy_score", "policy NULL", "policy", [&o, &w, sampling] {
    return fp8rl_policy_score(nullptr, w.tokens.data(), w.offsets.data(), 4, w.prompt_lengths.data(), &sampling,
                              o.logprobs, 8);
  });
  bad_sequences(t, "fp8rl_policy_score", w.tokens, w.offsets, w.config.vocab_size, score);
  t.invalid("fp8rl_policy_score", "prompt_lengths NULL", "prompt_lengths", [&o, &w, p, sampling] {
    return fp8rl_policy_score(p, w.tokens.data(), w.offsets.data(), 4, nullptr, &sampling, o.logprobs, 8);
  });
  for (const int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{6}})
    t.invalid("fp8rl_policy_score", "a prompt length " + std::to_string(bad), "prompt length " + std::to_string(bad),
              [&o, &w, p, sampling, bad] {
                std::vector<int64_t> lengths = w.prompt_lengths;
                lengths[2] = bad;
                return fp8rl_policy_score(p, w.tokens.data(), w.offsets.data(), 4, lengths.data(), &sampling,
                                          o.logprobs, 8);
              });
  for (const int64_t capacity : {int64_t{7}, int64_t{-1}})
    t.invalid("fp8rl_policy_score", "capacity " + std::to_string(capacity), "capacity",
              [&o, &w, p, sampling, capacity] {
                return fp8rl_policy_score(p, w.tokens.data(), w.offsets.data(), 4, w.prompt_lengths.data(), &sampling,
                                          o.logprobs, capacity);
              });
  t.invalid("fp8rl_policy_score", "logprobs NULL", "logprobs", [&w, p, sampling] {
    return fp8rl_policy_score(p, w.tokens.data(), w.offsets.data(), 4, w.prompt_lengths.data(), &sampling, nullptr, 8);
  });
  bad_sampling(t, "fp8rl_policy_score", sampling, [&o, &w, p](const fp8rl_sampling_options& options) {
    return fp8rl_policy_score(p, w.tokens.data(), w.offsets.data(), 4, w.prompt_lengths.data(), &options, o.logprobs,
                              8);
  });

  // Calibration: (tokens, offsets, count, options).
  fp8rl_calibration_options calibration;
  REQUIRE(fp8rl_calibration_options_init(&calibration) == FP8RL_OK);
  bad_sequences(t, "fp8rl_policy_recalibrate_attention_scales", w.tokens, w.offsets, w.config.vocab_size,
                [p, calibration](const int32_t* tokens, const int64_t* offs, int64_t count) {
                  return fp8rl_policy_recalibrate_attention_scales(p, tokens, offs, count, &calibration);
                });
  const std::function<fp8rl_status(const fp8rl_calibration_options&)> recalibrate =
      [&w, p](const fp8rl_calibration_options& options) {
        return fp8rl_policy_recalibrate_attention_scales(p, w.tokens.data(), w.offsets.data(), 4, &options);
      };
  t.invalid("fp8rl_policy_recalibrate_attention_scales", "policy NULL", "policy", [&w, calibration] {
    return fp8rl_policy_recalibrate_attention_scales(nullptr, w.tokens.data(), w.offsets.data(), 4, &calibration);
  });
  t.invalid("fp8rl_policy_recalibrate_attention_scales", "options NULL", "options", [&w, p] {
    return fp8rl_policy_recalibrate_attention_scales(p, w.tokens.data(), w.offsets.data(), 4, nullptr);
  });
  t.struct_sizes("fp8rl_policy_recalibrate_attention_scales", "options->struct_size", calibration, recalibrate);
  t.non_finite("fp8rl_policy_recalibrate_attention_scales", "options->percentile", calibration,
               &fp8rl_calibration_options::percentile, recalibrate);
  t.non_finite("fp8rl_policy_recalibrate_attention_scales", "options->margin", calibration,
               &fp8rl_calibration_options::margin, recalibrate);
  t.non_finite("fp8rl_policy_recalibrate_attention_scales", "options->max_value", calibration,
               &fp8rl_calibration_options::max_value, recalibrate);

  // The rollout object.
  const fp8rl_rollout* r = w.rollout;
  t.invalid("fp8rl_rollout_count", "rollout NULL", "rollout", [&o] { return fp8rl_rollout_count(nullptr, &o.count); });
  t.invalid("fp8rl_rollout_count", "out NULL", "out_count", [r] { return fp8rl_rollout_count(r, nullptr); });
  t.invalid("fp8rl_rollout_total_tokens", "rollout NULL", "rollout",
            [&o] { return fp8rl_rollout_total_tokens(nullptr, &o.total); });
  t.invalid("fp8rl_rollout_total_tokens", "out NULL", "out_total",
            [r] { return fp8rl_rollout_total_tokens(r, nullptr); });
  t.invalid("fp8rl_rollout_seconds", "rollout NULL", "rollout",
            [&o] { return fp8rl_rollout_seconds(nullptr, &o.seconds); });
  t.invalid("fp8rl_rollout_seconds", "out NULL", "out_seconds", [r] { return fp8rl_rollout_seconds(r, nullptr); });
  t.invalid("fp8rl_rollout_get", "rollout NULL", "rollout",
            [&o] { return fp8rl_rollout_get(nullptr, 0, &o.tokens_view, &o.logprobs_view, &o.length, &o.finish); });
  for (const int64_t index : {int64_t{-1}, int64_t{4}, kHugeCount})
    t.invalid("fp8rl_rollout_get", "index " + std::to_string(index), "index", [&o, r, index] {
      return fp8rl_rollout_get(r, index, &o.tokens_view, &o.logprobs_view, &o.length, &o.finish);
    });
  t.invalid("fp8rl_rollout_get_experts", "rollout NULL", "rollout",
            [&o] { return fp8rl_rollout_get_experts(nullptr, 0, &o.tokens_view, &o.length, &o.count, &o.total); });
  for (const int64_t index : {int64_t{-1}, int64_t{4}, kHugeCount})
    t.invalid("fp8rl_rollout_get_experts", "index " + std::to_string(index), "index", [&o, r, index] {
      return fp8rl_rollout_get_experts(r, index, &o.tokens_view, &o.length, &o.count, &o.total);
    });
  t.invalid("fp8rl_rollout_copy", "rollout NULL", "rollout",
            [&o] { return fp8rl_rollout_copy(nullptr, o.tokens, o.logprobs, 256, o.offsets, o.reasons); });
  for (const int64_t capacity : {int64_t{7}, int64_t{-1}})
    t.invalid("fp8rl_rollout_copy", "capacity " + std::to_string(capacity), "capacity", [&o, r, capacity] {
      return fp8rl_rollout_copy(r, o.tokens, o.logprobs, capacity, o.offsets, o.reasons);
    });
}

}  // namespace capi_test::bad_input
