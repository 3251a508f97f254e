// `fp8rl generate`: sample completions from an HF model or a built-in
// policy (optionally with weights from a training checkpoint).
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "dataset.h"
#include "generation.h"
#include "handles.h"
#include "model_flags.h"
#include "model_setup.h"
#include "tokenizer.h"

namespace fp8rl_cli {

void declare_generate(ArgParser& p) {
  p.option("model", "", "tiny|moe-tiny (built-in, from --seed and the model flags; default tiny) or an HF folder");
  p.option("checkpoint", "", "built-in policy: load weights from a training state (state.safetensors)");
  declare_model_flags(p);
  p.option("recipe", "bf16", "bf16|fp8|fp8-kv|fp8-gen (fp8-gen generates as fp8-kv)");
  p.option("prompt-ids", "", "a prompt as comma-separated token ids (repeatable)");
  p.option("task", "", "tokenize --prompt with a task's character vocabulary: addition|reverse");
  p.option("prompt", "", "a prompt in the task's characters, e.g. \"12+34=\" (repeatable)");
  p.option("temperature", "1", "0 = greedy");
  p.option("top-k", "0", "keep the k most likely tokens (0 = all)");
  p.option("top-p", "1", "nucleus mass");
  p.option("max-new-tokens", "16", "completion length limit");
  p.option("seed", "0", "seed of the built-in weights and of sampling");
  declare_threads_flag(p);
}

namespace {

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 0 || value > INT32_MAX) {
      throw UsageError("--prompt-ids needs comma-separated token ids, got '" + text + "'");
    }
    ids.push_back(static_cast<int32_t>(value));
  }
  if (ids.empty()) throw UsageError("--prompt-ids is empty");
  return ids;
}

// Prompts from --prompt-ids, or from --prompt through the task vocabulary (BOS first).
PromptBatch read_prompts(const ArgParser& p, const Tokenizer& tokenizer, bool& use_task) {
  PromptBatch batch;
  use_task = p.given("prompt");
  if (use_task == p.given("prompt-ids")) throw UsageError("give either --prompt-ids or --task with --prompt");
  if (use_task) p.choice("task", {"addition", "reverse"});
  for (const std::string& text : use_task ? p.all("prompt") : p.all("prompt-ids")) {
    const std::vector<int32_t> ids = use_task ? prompt_tokens(tokenizer, Problem{text, ""}) : parse_ids(text);
    batch.tokens.insert(batch.tokens.end(), ids.begin(), ids.end());
    batch.offsets.push_back(static_cast<int64_t>(batch.tokens.size()));
  }
  return batch;
}

Policy make_policy(const ArgParser& p, const Context& context, uint64_t seed) {
  const std::string model = p.text("model");
  if (!is_builtin_model(model)) {
    if (p.given("checkpoint")) throw UsageError("--checkpoint applies to a built-in model, not an HF folder");
    return load_policy(context, model);
  }
  Policy policy = create_random_policy(context, builtin_config(model_shape(p, model), Tokenizer().padded_size()), seed);
  if (p.given("checkpoint")) {
    // The C API reads a training state only through a trainer; its master weights become the policy's.
    fp8rl_trainer_options options;
    check(fp8rl_trainer_options_init(&options), "fp8rl_trainer_options_init");
    const Trainer trainer(policy.get(), options);
    check(fp8rl_trainer_load_state(trainer.get(), p.text("checkpoint").c_str()), "fp8rl_trainer_load_state");
  }
  return policy;
}

void print_completion(size_t index, const Completion& c, const Tokenizer* tokenizer) {
  static const char* const reasons[] = {"stop", "length", "context full"};
  std::printf("[%zu] finish: %s\n  tokens:  ", index, reasons[static_cast<int>(c.finish) % 3]);
  for (int32_t t : c.tokens) std::printf(" %d", t);
  if (tokenizer != nullptr) std::printf("\n  text:     %s", tokenizer->decode(c.tokens).c_str());
  std::printf("\n  logprobs:");
  for (float lp : c.logprobs) std::printf(" %.4f", static_cast<double>(lp));
  std::printf("\n");
}

}  // namespace

int run_generate(const ArgParser& p) {
  const Tokenizer tokenizer;
  bool use_task = false;
  const PromptBatch prompts = read_prompts(p, tokenizer, use_task);
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed", 0, INT64_MAX));
  fp8rl_sampling_options options;
  check(fp8rl_sampling_options_init(&options), "fp8rl_sampling_options_init");
  options.temperature = static_cast<float>(p.real("temperature", 0, 100));
  options.top_k = static_cast<int32_t>(p.integer("top-k", 0, INT32_MAX));
  options.top_p = static_cast<float>(p.real("top-p", 1e-6, 1));
  options.max_new_tokens = static_cast<int32_t>(p.integer("max-new-tokens", 1, 1 << 20));
  const int32_t eos = Tokenizer::kEos;
  if (use_task) {  // the character vocabulary's EOS ends a completion, whatever the model's config says
    options.stop_token_ids = &eos;
    options.num_stop_token_ids = 1;
  }
  const std::string recipe = p.choice("recipe", recipe_names());
  Context context(threads(p));
  const Policy policy = make_policy(p, context, seed);
  set_recipe(policy, generator_recipe(recipe));
  std::vector<uint64_t> seeds;
  for (int64_t i = 0; i < prompts.count(); ++i) seeds.push_back(seed * 1000003ull + static_cast<uint64_t>(i));
  const Generated out = generate(policy, prompts, seeds, options);
  for (size_t i = 0; i < out.completions.size(); ++i) {
    print_completion(i, out.completions[i], use_task ? &tokenizer : nullptr);
  }
  std::fprintf(stderr, "generated in %.3f s\n", out.seconds);
  return 0;
}

}  // namespace fp8rl_cli
