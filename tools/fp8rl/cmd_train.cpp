// `fp8rl train`: SFT warm-start, then GRPO on a built-in verifiable task, or
// on a JSONL text dataset with an HF model folder's tokenizer (--data).
#include <cstdio>
#include <string>

#include "checkpoint.h"
#include "commands.h"
#include "model_flags.h"
#include "model_setup.h"
#include "progress.h"
#include "summary.h"
#include "text_task.h"
#include "training.h"
#include "world.h"

namespace fp8rl_cli {

void declare_train(ArgParser& p) {
  const TrainConfig d;
  p.option("task", d.task, "addition|reverse");
  p.option("digits", std::to_string(d.digits), "addition: digits per operand");
  p.option("min-length", std::to_string(d.min_length), "reverse: shortest string");
  p.option("length", std::to_string(d.length), "reverse: longest string");
  p.option("letters", std::to_string(d.letters), "reverse: alphabet size");
  p.option("partial-credit", "0",
           "built-in tasks: reward the share of answer characters in place, 1 only when exact (0|1); validation "
           "accuracy is then that mean reward");
  p.option("recipe", d.recipe,
           recipe_choices() +
               " (fp8-gen: FP8 generator with FP8 KV and attention, BF16 learner; fp8-gen-linear: the same with FP8 "
               "linear layers only; *-head: FP8 LM head)");
  p.option("importance", d.importance, "off|plain|truncated|masked|sequence-masked");
  p.option("is-cap", "2", "importance-weight cap (upper bound)");
  p.option("group-size", std::to_string(d.group_size), "completions per prompt");
  p.option("prompts-per-step", std::to_string(d.prompts_per_step), "prompts per GRPO step");
  p.option("minibatches", std::to_string(d.minibatches), "optimizer steps per GRPO step (PPO mini-batches)");
  p.option("lr", "2e-4", "GRPO learning rate");
  p.option("normalize-std", d.normalize_by_std ? "1" : "0", "divide group advantages by their std (0|1)");
  p.option("sft-steps", std::to_string(d.sft_steps), "supervised warm-start steps");
  p.option("sft-lr", "2e-3", "SFT learning rate");
  p.option("sft-recipe", "", "recipe of the SFT steps (default: --recipe); GRPO then switches to --recipe");
  p.option("sft-batch", std::to_string(d.sft_batch), "problems per SFT step");
  p.option("steps", std::to_string(d.steps), "GRPO steps");
  p.option("seed", "0", "seed of weights, prompts and sampling");
  declare_threads_flag(p);
  p.option("out", "", "output folder: metrics.jsonl, checkpoints/, summary.json");
  p.flag("resume", "continue from OUT/checkpoints/state.safetensors");
  p.option("save-every", std::to_string(d.save_every), "checkpoint every N GRPO steps (and at the end)");
  p.option("eval-every", std::to_string(d.eval_every), "validate every N GRPO steps (and at the end)");
  p.option("val-size", std::to_string(d.val_size), "validation problems");
  p.option("model", "tiny", "built-in model: tiny|moe-tiny (an HF folder goes with --init-from)");
  p.option("init-from", "", "HF model folder to start from (with --data: its tokenizer.json encodes the text)");
  p.option("data", "", "text training: JSONL rows {\"prompt\": ..., \"answer\": ...} (needs --init-from, --reward)");
  p.option("val", "", "text training: validation JSONL (default: the first --val-size training rows)");
  declare_text_flags(p);
  declare_model_flags(p);
  p.option("max-new-tokens", "0", "completion limit (0 = longest answer + 3)");
  p.option("temperature", "1", "sampling temperature of rollouts");
  p.option("routing-replay", "0", "MoE: train with the generator's recorded experts (0|1)");
  p.option("router-aux-coef", "0", "MoE: weight of the load-balancing loss");
  p.option("stale-scales", "0",
           "FP8 KV cache: generate with the attention scales GRPO began with, never recalibrated (0|1); with "
           "one policy (fp8-kv) it also learns with them");
  p.flag("quiet", "no progress lines");
}

namespace {

// The text-training flags; those of the built-in tasks do not mix with them.
void text_options_from(const ArgParser& p, TrainConfig& c) {
  c.text.train = p.text("data");
  if (c.text.train.empty()) {
    if (p.given("val") || text_flags_given(p))
      throw UsageError("--val, --reward, --prompt-template and the field flags apply to text training: give --data");
    return;
  }
  for (const char* flag : {"task", "digits", "min-length", "length", "letters", "partial-credit"})
    if (p.given(flag)) throw UsageError(std::string("--") + flag + " chooses a built-in task; --data trains on text");
  if (c.init_from.empty())
    throw UsageError("--data needs --init-from: a Hugging Face model folder whose tokenizer.json encodes the text");
  c.text.val = p.text("val");
  read_text_flags(p, c.text);
}

}  // namespace

TrainConfig train_config_from(const ArgParser& p) {
  TrainConfig c;
  c.task = p.choice("task", {"addition", "reverse"});
  c.digits = static_cast<int>(p.integer("digits", 1, 9));
  c.length = static_cast<int>(p.integer("length", 1, 1000));
  c.min_length = static_cast<int>(p.integer("min-length", 1, c.length));
  c.partial_credit = p.integer("partial-credit", 0, 1) != 0;
  c.letters = static_cast<int>(p.integer("letters", 1, 26));
  c.recipe = p.choice("recipe", recipe_names());
  c.importance = p.choice("importance", {"off", "plain", "truncated", "masked", "sequence-masked"});
  c.is_cap = p.real("is-cap", 1e-6, 1e6);
  c.group_size = static_cast<int>(p.integer("group-size", 2, 1024));
  c.prompts_per_step = static_cast<int>(p.integer("prompts-per-step", 1, 4096));
  c.minibatches = static_cast<int>(p.integer("minibatches", 1, 4096));
  c.lr = p.real("lr", 0, 10);
  c.normalize_by_std = p.integer("normalize-std", 0, 1) != 0;
  c.sft_steps = p.integer("sft-steps", 0, 1000000);
  c.sft_lr = p.real("sft-lr", 0, 10);
  if (p.given("sft-recipe")) c.sft_recipe = p.choice("sft-recipe", recipe_names());
  c.sft_batch = static_cast<int>(p.integer("sft-batch", 1, 65536));
  c.steps = p.integer("steps", 0, 10000000);
  c.seed = static_cast<uint64_t>(p.integer("seed", 0, INT64_MAX));
  c.threads = threads(p);
  c.out_dir = p.text("out");
  c.resume = p.is_set("resume");
  c.save_every = p.integer("save-every", 1, INT64_MAX);
  c.eval_every = p.integer("eval-every", 1, INT64_MAX);
  c.val_size = p.integer("val-size", 1, 100000);
  c.init_from = p.text("init-from");
  if (!c.init_from.empty() && p.given("model")) throw UsageError("give either --model or --init-from");
  c.shape = model_shape(p, p.choice("model", builtin_model_names()));
  c.max_new_tokens = static_cast<int>(p.integer("max-new-tokens", 0, 100000));
  c.temperature = p.real("temperature", 1e-3, 100);
  c.routing_replay = p.integer("routing-replay", 0, 1) != 0;
  c.router_aux_coef = p.real("router-aux-coef", 0, 1e6);
  c.stale_scales = p.integer("stale-scales", 0, 1) != 0;
  text_options_from(p, c);
  return c;
}

int run_train(const ArgParser& p) {
  const TrainConfig config = train_config_from(p);
  const bool leader = world().leader();  // rank 0 alone reports and writes
  if (leader)
    std::fprintf(stderr, "fp8rl train: task %s, recipe %s, %lld SFT + %lld GRPO steps, batch %d x %d, seed %llu, %s\n",
                 config.task_label().c_str(), config.recipe.c_str(), static_cast<long long>(config.sft_steps),
                 static_cast<long long>(config.steps), config.prompts_per_step, config.group_size,
                 static_cast<unsigned long long>(config.seed), world().description().c_str());
  ProgressBar progress(stderr, p.is_set("quiet"));
  const RunResult result = run_training(config, leader ? &progress : nullptr);
  if (!leader) return 0;
  const Summary summary = summarize(config, result);
  std::fputs(summary_text(config, summary).c_str(), stdout);
  if (!config.out_dir.empty()) write_text_file(RunPaths(config.out_dir).summary, summary_json(config, summary));
  return 0;
}

}  // namespace fp8rl_cli
