// `fp8rl info`: what a model is and what it costs under a recipe, and what
// this build of the library offers; with --plan, each data-parallel training
// rank's memory for a model shape, planned without building the model.
#include <cstdio>
#include <string>

#include "cli_error.h"
#include "commands.h"
#include "handles.h"
#include "model_flags.h"
#include "model_setup.h"
#include "tokenizer.h"

namespace fp8rl_cli {

void declare_info(ArgParser& p) {
  p.option("model", "", "tiny|moe-tiny (built-in, from the model flags; default tiny) or an HF folder");
  declare_model_flags(p);
  p.option("recipe", "bf16", recipe_choices() + " (fp8-gen*: shows the generator's recipe; *-head: FP8 LM head)");
  p.flag("trainer", "also create a trainer and report its memory");
  p.flag("plan", "plan each training rank's memory from the model flags instead (builds nothing)");
  p.option("ranks", "1", "--plan: data-parallel ranks");
  p.option("kv-tokens", "0", "--plan: KV-cache tokens per rank (sequences x positions)");
  p.option("vocab", "", "--plan: vocabulary size (default: the built-in tokenizer's)");
  p.flag("tie-embeddings", "--plan: the output head shares the embeddings");
  declare_threads_flag(p);
}

namespace {

const char* precision(fp8rl_precision p) { return p == FP8RL_PRECISION_FP8 ? "FP8" : "BF16"; }

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

// HF's model_type names, indexed by fp8rl_model_family.
const char* family_name(fp8rl_model_family family) {
  static const char* const names[] = {"llama", "qwen2", "qwen3", "qwen3_moe"};
  const int index = static_cast<int>(family);
  return index >= 0 && index < static_cast<int>(sizeof names / sizeof names[0]) ? names[index] : "?";
}

void print_moe(const fp8rl_model_config& c) {
  std::printf("  experts %lld, %lld per token, expert intermediate %lld, sparse every %lld layer(s)",
              static_cast<long long>(c.num_experts), static_cast<long long>(c.num_experts_per_tok),
              static_cast<long long>(c.moe_intermediate_size), static_cast<long long>(c.decoder_sparse_step));
  if (c.num_mlp_only_layers > 0) {
    std::printf(", dense layers");
    for (int32_t i = 0; i < c.num_mlp_only_layers; ++i) std::printf(" %d", c.mlp_only_layers[i]);
  }
  std::printf(",\n  top-k weights renormalized %s, router aux loss coefficient %g\n", c.norm_topk_prob ? "yes" : "no",
              c.router_aux_loss_coef);
}

void print_config(const fp8rl_model_config& c) {
  std::printf(
      "model\n  family %s, vocab %lld, hidden %lld, layers %lld, heads %lld/%lld kv, head_dim %lld,\n"
      "  intermediate %lld, max positions %lld, tied embeddings %s\n",
      family_name(c.family), static_cast<long long>(c.vocab_size), static_cast<long long>(c.hidden_size),
      static_cast<long long>(c.num_layers), static_cast<long long>(c.num_attention_heads),
      static_cast<long long>(c.num_key_value_heads),
      static_cast<long long>(c.head_dim != 0 ? c.head_dim : c.hidden_size / c.num_attention_heads),
      static_cast<long long>(c.intermediate_size), static_cast<long long>(c.max_position_embeddings),
      c.tie_word_embeddings ? "yes" : "no");
  if (c.family == FP8RL_MODEL_FAMILY_QWEN3_MOE) print_moe(c);
}

void print_memory(const char* title, const fp8rl_memory_report& m) {
  std::printf("%s\n  master weights   %10.3f MiB\n  compute weights  %10.3f MiB\n", title, mib(m.master_weights),
              mib(m.compute_weights));
  if (m.gradients != 0 || m.optimizer_state != 0) {
    std::printf("  gradients        %10.3f MiB\n  optimizer state  %10.3f MiB\n  backward weights %10.3f MiB\n",
                mib(m.gradients), mib(m.optimizer_state), mib(m.backward_weights));
  }
}

void print_build(const Context& context) {
  uint32_t features = 0;
  check(fp8rl_build_features(&features), "fp8rl_build_features");
  const char* description = nullptr;
  check(fp8rl_context_get_description(context.get(), &description), "fp8rl_context_get_description");
  std::printf("library\n  version %s (header %d.%d.%d)\n  backend %s\n  features CUDA %s, AVX2 %s, AVX-512 %s\n",
              fp8rl_version_string(), FP8RL_VERSION_MAJOR, FP8RL_VERSION_MINOR, FP8RL_VERSION_PATCH, description,
              features & FP8RL_FEATURE_CUDA ? "yes" : "no", features & FP8RL_FEATURE_AVX2 ? "yes" : "no",
              features & FP8RL_FEATURE_AVX512 ? "yes" : "no");
  int32_t rank = 0, world_size = 1;
  check(fp8rl_context_get_rank(context.get(), &rank), "fp8rl_context_get_rank");
  check(fp8rl_context_get_world_size(context.get(), &world_size), "fp8rl_context_get_world_size");
  std::printf("  data-parallel rank %d of %d\n", rank, world_size);
}

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

// One row per rank: only the optimizer state differs between ranks (by a
// few 128-row bands of a matrix at most), since data parallelism shards nothing else.
void print_plan(const fp8rl_model_config& config, const fp8rl_recipe& recipe, int32_t ranks, int64_t kv_tokens) {
  std::printf("memory plan per rank, GiB (data-parallel ranks %d, KV-cache tokens %lld)\n", ranks,
              static_cast<long long>(kv_tokens));
  std::printf("%6s %10s %10s %10s %10s %10s %10s %10s\n", "rank", "master", "compute", "gradients", "optimizer",
              "backward", "kv-cache", "total");
  for (int32_t rank = 0; rank < ranks; ++rank) {
    fp8rl_memory_report m;
    check(fp8rl_memory_report_init(&m), "fp8rl_memory_report_init");
    check(fp8rl_memory_plan(&config, &recipe, ranks, rank, kv_tokens, &m), "fp8rl_memory_plan");
    const int64_t total =
        m.master_weights + m.compute_weights + m.gradients + m.optimizer_state + m.backward_weights + m.kv_cache;
    std::printf("%6d %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", rank, gib(m.master_weights),
                gib(m.compute_weights), gib(m.gradients), gib(m.optimizer_state), gib(m.backward_weights),
                gib(m.kv_cache), gib(total));
  }
}

void print_recipe(const std::string& name, const fp8rl_recipe& recipe) {
  std::printf("recipe %s\n  linear %s, KV cache %s, attention %s, head %s, scales %s\n", name.c_str(),
              precision(recipe.linear), precision(recipe.kv_cache), precision(recipe.attention), precision(recipe.head),
              recipe.scale_format == FP8RL_SCALE_POW2 ? "pow2" : "fp32");
}

// Total and active (per token: only num_experts_per_tok experts of a sparse
// layer count) weights; the two are equal for a dense model.
void print_parameters(const fp8rl_model_config& config) {
  int64_t total = 0, active = 0;
  check(fp8rl_model_config_parameter_count(&config, &total), "fp8rl_model_config_parameter_count");
  check(fp8rl_model_config_active_parameter_count(&config, &active), "fp8rl_model_config_active_parameter_count");
  std::printf("parameters %lld total, %lld active per token\n", static_cast<long long>(total),
              static_cast<long long>(active));
}

// --plan: a built-in model's shape from the flags, planned through
// fp8rl_memory_plan without building it (an 8B or 70B shape plans at once).
int run_plan(const ArgParser& p, const std::string& recipe_name) {
  const std::string model = p.text("model");
  if (!is_builtin_model(model))
    throw UsageError(
        "--plan plans a built-in shape (--model tiny|moe-tiny and the model flags); it does not "
        "read an HF folder");
  const int64_t vocab = p.given("vocab") ? p.integer("vocab", 1, int64_t{1} << 24) : Tokenizer().padded_size();
  fp8rl_model_config config = builtin_config(model_shape(p, model), vocab);
  config.tie_word_embeddings = p.is_set("tie-embeddings") ? 1 : 0;
  // The trained policy's recipe: under fp8-gen(-linear) that is BF16, and
  // the FP8 generator is a second policy this plan does not include.
  const fp8rl_recipe recipe = learner_recipe(recipe_name);
  print_config(config);
  print_recipe(generates_apart(recipe_name) ? "bf16 (the trainer's under " + recipe_name + ")" : recipe_name, recipe);
  print_parameters(config);
  print_plan(config, recipe, static_cast<int32_t>(p.integer("ranks", 1, 1 << 20)),
             p.integer("kv-tokens", 0, int64_t{1} << 40));
  return 0;
}

}  // namespace

int run_info(const ArgParser& p) {
  const std::string recipe_name = p.choice("recipe", recipe_names());
  if (p.is_set("plan")) return run_plan(p, recipe_name);
  for (const char* option : {"ranks", "kv-tokens", "vocab", "tie-embeddings"})
    if (p.given(option)) throw UsageError(std::string("--") + option + " needs --plan");
  Context context(threads(p));
  const std::string model = p.text("model");
  const Policy policy =
      is_builtin_model(model)
          ? create_random_policy(context, builtin_config(model_shape(p, model), Tokenizer().padded_size()), 0)
          : load_policy(context, model);
  const fp8rl_recipe recipe = generator_recipe(recipe_name);
  set_recipe(policy, recipe);
  const fp8rl_model_config config = policy_config(policy);
  print_config(config);
  print_recipe(recipe_name, recipe);
  print_parameters(config);
  fp8rl_memory_report report;
  check(fp8rl_memory_report_init(&report), "fp8rl_memory_report_init");
  check(fp8rl_policy_memory(policy.get(), &report), "fp8rl_policy_memory");
  print_memory("policy memory", report);
  if (p.is_set("trainer")) {
    fp8rl_trainer_options options;
    check(fp8rl_trainer_options_init(&options), "fp8rl_trainer_options_init");
    const Trainer trainer(policy.get(), options);
    fp8rl_memory_report trained;
    check(fp8rl_memory_report_init(&trained), "fp8rl_memory_report_init");
    check(fp8rl_trainer_memory(trainer.get(), &trained), "fp8rl_trainer_memory");
    print_memory("trainer memory (policy included)", trained);
  }
  print_build(context);
  return 0;
}

}  // namespace fp8rl_cli
