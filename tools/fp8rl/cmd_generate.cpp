// `fp8rl generate`: sample completions from an HF model or a built-in
// policy (optionally with weights from a training checkpoint). --prompt text
// goes through the folder's tokenizer.json when it has one, or through a
// built-in task's character vocabulary with --task.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "dataset.h"
#include "generation.h"
#include "handles.h"
#include "hf_tokenizer.h"
#include "model_flags.h"
#include "model_setup.h"
#include "tokenizer.h"

namespace fp8rl_cli {

void declare_generate(ArgParser& p) {
  p.option("model", "", "tiny|moe-tiny (built-in, from --seed and the model flags; default tiny) or an HF folder");
  p.option("init-from", "", "an HF folder (as --model FOLDER); its tokenizer.json encodes --prompt and decodes");
  p.option("checkpoint", "", "built-in policy: load weights from a training state (state.safetensors)");
  declare_model_flags(p);
  p.option("recipe", "bf16",
           recipe_choices() + " (fp8-gen generates as fp8-kv, fp8-gen-linear as fp8; *-head: FP8 LM head)");
  p.option("prompt-ids", "", "a prompt as comma-separated token ids (repeatable)");
  p.option("task", "", "tokenize --prompt with a task's character vocabulary: addition|reverse");
  p.option("prompt", "", "a prompt: text for a folder's tokenizer, or --task characters \"12+34=\" (repeatable)");
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

// How --prompt text becomes ids and completions become text: a built-in
// task's characters (--task), or the model folder's tokenizer.json.
struct Vocabulary {
  const Tokenizer* characters = nullptr;
  std::unique_ptr<HfTokenizer> folder;
  std::vector<int32_t> stop;  // ids that end a completion
};

// The model: --init-from, else --model ("" or a built-in name for the built-in policy).
std::string model_name(const ArgParser& p) {
  if (p.given("init-from") && p.given("model")) throw UsageError("give either --model or --init-from");
  return p.given("init-from") ? p.text("init-from") : p.text("model");
}

Vocabulary read_vocabulary(const ArgParser& p, const Tokenizer& characters) {
  Vocabulary v;
  const std::string model = model_name(p);
  if (p.given("task")) {
    p.choice("task", {"addition", "reverse"});
    v.characters = &characters;
    v.stop = {Tokenizer::kEos};  // the character vocabulary's EOS, whatever the model's config says
  } else if (!is_builtin_model(model) && HfTokenizer::present(model)) {
    v.folder = std::make_unique<HfTokenizer>(model);
    v.stop = v.folder->eos_ids();
  }
  return v;
}

// Prompts from --prompt-ids, or --prompt through the vocabulary (the task's: BOS first;
// the folder's: the special tokens its post-processor adds).
PromptBatch read_prompts(const ArgParser& p, const Vocabulary& vocabulary) {
  PromptBatch batch;
  const bool text = p.given("prompt");
  if (text == p.given("prompt-ids")) throw UsageError("give either --prompt-ids or --prompt");
  if (text && vocabulary.characters == nullptr && !vocabulary.folder)
    throw UsageError("--prompt needs --task (the built-in character vocabulary) or a model folder with tokenizer.json");
  for (const std::string& item : text ? p.all("prompt") : p.all("prompt-ids")) {
    std::vector<int32_t> ids;
    if (!text) {
      ids = parse_ids(item);
    } else if (vocabulary.characters != nullptr) {
      ids = prompt_tokens(*vocabulary.characters, Problem{item, ""});
    } else {
      ids = vocabulary.folder->encode(item, /*add_special_tokens=*/true);
      if (ids.empty()) throw UsageError("--prompt '" + item + "' has no tokens");
    }
    batch.tokens.insert(batch.tokens.end(), ids.begin(), ids.end());
    batch.offsets.push_back(static_cast<int64_t>(batch.tokens.size()));
  }
  return batch;
}

Policy make_policy(const ArgParser& p, const Context& context, uint64_t seed) {
  const std::string model = model_name(p);
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

// The completion's text: the characters (special tokens shown), or the folder
// tokenizer's decoding without special tokens and without the stop id.
std::string completion_text(const Completion& c, const Vocabulary& v) {
  if (v.characters != nullptr) return v.characters->decode(c.tokens);
  std::vector<int32_t> ids = c.tokens;
  if (c.finish == FP8RL_FINISH_STOP && !ids.empty()) ids.pop_back();
  return v.folder->decode(ids, /*skip_special_tokens=*/true);
}

void print_completion(size_t index, const Completion& c, const Vocabulary& vocabulary) {
  static const char* const reasons[] = {"stop", "length", "context full"};
  std::printf("[%zu] finish: %s\n  tokens:  ", index, reasons[static_cast<int>(c.finish) % 3]);
  for (int32_t t : c.tokens) std::printf(" %d", t);
  if (vocabulary.characters != nullptr || vocabulary.folder)
    std::printf("\n  text:     %s", completion_text(c, vocabulary).c_str());
  std::printf("\n  logprobs:");
  for (float lp : c.logprobs) std::printf(" %.4f", static_cast<double>(lp));
  std::printf("\n");
}

}  // namespace

int run_generate(const ArgParser& p) {
  const Tokenizer characters;
  const Vocabulary vocabulary = read_vocabulary(p, characters);
  const PromptBatch prompts = read_prompts(p, vocabulary);
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed", 0, INT64_MAX));
  fp8rl_sampling_options options;
  check(fp8rl_sampling_options_init(&options), "fp8rl_sampling_options_init");
  options.temperature = static_cast<float>(p.real("temperature", 0, 100));
  options.top_k = static_cast<int32_t>(p.integer("top-k", 0, INT32_MAX));
  options.top_p = static_cast<float>(p.real("top-p", 1e-6, 1));
  options.max_new_tokens = static_cast<int32_t>(p.integer("max-new-tokens", 1, 1 << 20));
  if (!vocabulary.stop.empty()) {
    options.stop_token_ids = vocabulary.stop.data();
    options.num_stop_token_ids = static_cast<int64_t>(vocabulary.stop.size());
  }
  const std::string recipe = p.choice("recipe", recipe_names());
  Context context(threads(p));
  const Policy policy = make_policy(p, context, seed);
  set_recipe(policy, generator_recipe(recipe));
  std::vector<uint64_t> seeds;
  for (int64_t i = 0; i < prompts.count(); ++i) seeds.push_back(seed * 1000003ull + static_cast<uint64_t>(i));
  const Generated out = generate(policy, prompts, seeds, options);
  for (size_t i = 0; i < out.completions.size(); ++i) {
    print_completion(i, out.completions[i], vocabulary);
  }
  std::fprintf(stderr, "generated in %.3f s\n", out.seconds);
  return 0;
}

}  // namespace fp8rl_cli
