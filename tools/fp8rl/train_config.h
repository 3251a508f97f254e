// What a training run is asked to do (TrainConfig), what it reports per step
// (StepRecord) and in the end (RunResult), and who watches it (ProgressSink).
// `fp8rl train` fills a TrainConfig from flags; `fp8rl compare` builds several.
#ifndef FP8RL_TOOLS_TRAIN_CONFIG_H
#define FP8RL_TOOLS_TRAIN_CONFIG_H

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "text_task.h"

namespace fp8rl_cli {

// The built-in policy's architecture (ignored with init_from). experts > 0
// makes it a Qwen3-MoE whose every layer is sparse; intermediate is then
// unused by the layers but still a field of the config, as in HF's files.
struct ModelShape {
  int64_t layers = 2;
  int64_t hidden = 128;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t intermediate = 256;
  int64_t max_positions = 64;
  int64_t experts = 0;  // 0: a dense Llama
  int64_t experts_per_token = 0;
  int64_t moe_intermediate = 0;
};

struct TrainConfig {
  std::string task = "addition";         // addition | reverse
  int digits = 2;                        // addition: operand digits
  int min_length = 1;                    // reverse: shortest string
  int length = 5;                        // reverse: longest string
  int letters = 5;                       // reverse: alphabet size
  bool partial_credit = false;           // built-in tasks: reward the share of answer tokens in place
  std::string recipe = "fp8-gen";        // bf16 | fp8 | fp8-kv | fp8-gen
  std::string importance = "truncated";  // off | plain | truncated | masked | sequence-masked
  double is_cap = 2.0;
  int group_size = 8;
  int minibatches = 1;        // optimizer steps per GRPO step (PPO mini-batches of its rollouts)
  int prompts_per_step = 32;  // large batches: Adam turns sparse-reward noise into full-size steps
  double lr = 2e-4;           // 5e-4 and above collapse the tiny policy (measured)
  bool normalize_by_std = true;
  int64_t sft_steps = 500;  // ~13% validation accuracy on 2-digit addition: clearly incomplete
  // The recipe of the SFT steps ("" = the run's): a shared BF16 SFT gives
  // every recipe's GRPO the same starting policy, as RL from one checkpoint.
  std::string sft_recipe;
  // The folder of a finished SFT-only run (GRPO steps 0) with the same SFT
  // settings and seed: this run loads its final policy and attention scales
  // and replays its SFT records instead of training them again, with the
  // same result bit for bit (fp8rl compare shares one SFT per seed this way).
  std::string sft_from;
  double sft_lr = 2e-3;
  int sft_batch = 64;
  int64_t steps = 500;  // GRPO steps
  uint64_t seed = 0;
  int threads = 0;      // 0 = all hardware threads
  std::string out_dir;  // "" = write no files
  bool resume = false;
  int64_t save_every = 100;
  int64_t eval_every = 25;
  int64_t val_size = 200;
  ModelShape shape;
  std::string init_from;   // an HF folder instead of random weights
  int max_new_tokens = 0;  // 0 = the task's longest answer + EOS + 2
  double temperature = 1.0;
  // Mixture-of-Experts policies: train with the generator's recorded experts
  // (routing replay), and the load-balancing loss's weight.
  bool routing_replay = false;
  double router_aux_coef = 0.0;
  // FP8 attention: the sampling policy keeps the attention (Q/K/V) scales it
  // had when GRPO began instead of taking each step's recalibrated ones: the
  // stale scales of an engine that never recalibrates. Under a one-policy
  // recipe (fp8-kv) the learner is that policy, so it learns with them too.
  bool stale_scales = false;
  // Text training: a JSONL dataset under the init_from folder's own
  // tokenizer, scored by a text reward. text.train empty: the built-in task
  // above. (text.folder and text.val_size are set from init_from and val_size.)
  TextTaskOptions text;

  // What the run trains on, for people: "addition", "text train.jsonl".
  std::string task_label() const { return text.train.empty() ? task : "text " + text.train; }
  // What `fp8rl compare` calls the run: "recipe:importance[:stale][:replay]".
  std::string run_label() const {
    return recipe + ":" + importance + (stale_scales ? ":stale" : "") + (routing_replay ? ":replay" : "");
  }
};

// One SFT step or GRPO iteration (--minibatches optimizer steps), as metrics.jsonl records it.
struct StepRecord {
  std::string phase;  // "sft" | "grpo"
  int64_t step = 0;   // 1-based within its phase
  double loss = 0, reward_mean = 0, val_acc = NAN, grad_norm = 0, clip_fraction = 0, entropy = 0;
  double token_mult_prob_error = 1, gen_kl_error = 0, is_weight_mean = 1, tokens_per_second = 0;
  double generation_seconds = 0, recompute_seconds = 0, train_seconds = 0, recalibration_seconds = 0;
  double recalibration_fraction = 0, step_seconds = 0;
  double ratio_max = 1, old_policy_kl = 0;  // how far the mini-batch steps moved from the rollout policy
  // Mixture-of-Experts policies' GRPO steps: the share of the training
  // router's choices the generator made (NaN when not measured) and the
  // load-balancing loss.
  double routing_agreement = NAN, router_aux_loss = 0;
  // Data parallelism: bytes this rank sent into reductions and received from
  // gathers during the step, and its seconds in collectives (0 on one rank).
  int64_t bytes_reduced = 0, bytes_gathered = 0;
  double communication_seconds = 0;
  bool skipped = false;
  bool has_val() const { return !std::isnan(val_acc); }
};

struct RunResult {
  std::vector<StepRecord> steps;                      // SFT steps, then GRPO steps
  std::vector<std::pair<int64_t, double>> val_curve;  // (GRPO step, accuracy); step 0 = SFT end
  double sft_end_val_acc = NAN;
  double final_val_acc = NAN;
  double best_val_acc = NAN;
  double wall_seconds = 0;  // this process only (a resumed run counts from the resume)
};

// Receives progress; every method may be left as the default no-op.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void on_phase(const std::string& /*phase*/, int64_t /*total_steps*/) {}
  virtual void on_step(const StepRecord& /*record*/, int64_t /*total_steps*/) {}
  virtual void on_message(const std::string& /*text*/) {}
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_TRAIN_CONFIG_H
