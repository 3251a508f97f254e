// `fp8rl info`: what a model is and what it costs under a recipe, and what
// this build of the library offers.
#include <cstdio>
#include <string>

#include "commands.h"
#include "handles.h"
#include "model_flags.h"
#include "model_setup.h"
#include "tokenizer.h"

namespace fp8rl_cli {

void declare_info(ArgParser& p) {
  p.option("model", "", "HF model folder (default: the built-in policy from the model flags)");
  declare_model_flags(p);
  p.option("recipe", "bf16", "bf16|fp8|fp8-kv|fp8-gen (fp8-gen shows the generator's recipe)");
  p.flag("trainer", "also create a trainer and report its memory");
  declare_threads_flag(p);
}

namespace {

const char* precision(fp8rl_precision p) { return p == FP8RL_PRECISION_FP8 ? "FP8" : "BF16"; }

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

void print_config(const fp8rl_model_config& c) {
  static const char* const families[] = {"llama", "qwen2", "qwen3"};
  const int family = static_cast<int>(c.family);
  std::printf(
      "model\n  family %s, vocab %lld, hidden %lld, layers %lld, heads %lld/%lld kv, head_dim %lld,\n"
      "  intermediate %lld, max positions %lld, tied embeddings %s\n",
      family >= 0 && family < 3 ? families[family] : "?", static_cast<long long>(c.vocab_size),
      static_cast<long long>(c.hidden_size), static_cast<long long>(c.num_layers),
      static_cast<long long>(c.num_attention_heads), static_cast<long long>(c.num_key_value_heads),
      static_cast<long long>(c.head_dim != 0 ? c.head_dim : c.hidden_size / c.num_attention_heads),
      static_cast<long long>(c.intermediate_size), static_cast<long long>(c.max_position_embeddings),
      c.tie_word_embeddings ? "yes" : "no");
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
}

}  // namespace

int run_info(const ArgParser& p) {
  const std::string recipe_name = p.choice("recipe", recipe_names());
  Context context(threads(p));
  const Policy policy =
      p.text("model").empty()
          ? create_random_policy(context, builtin_config(model_shape(p), Tokenizer().padded_size()), 0)
          : load_policy(context, p.text("model"));
  const fp8rl_recipe recipe = generator_recipe(recipe_name);
  set_recipe(policy, recipe);
  print_config(policy_config(policy));
  std::printf("recipe %s\n  linear %s, KV cache %s, attention %s, scales %s\n", recipe_name.c_str(),
              precision(recipe.linear), precision(recipe.kv_cache), precision(recipe.attention),
              recipe.scale_format == FP8RL_SCALE_POW2 ? "pow2" : "fp32");
  int64_t parameters = 0;
  check(fp8rl_policy_parameter_count(policy.get(), &parameters), "fp8rl_policy_parameter_count");
  std::printf("parameters %lld\n", static_cast<long long>(parameters));
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
