// RL training steps on a policy, in the policy's own recipe: the trainer
// recomputes the batch's log-probs (logp_old), forms advantages, runs the
// loss's forward and backward over micro-batches (FP8 fprop, dgrad and wgrad
// under an FP8 recipe), clips the global gradient norm, takes an AdamW step on
// the FP32 master weights, then recalibrates: requantizes every compute copy
// of the weights with fresh block scales and replaces the attention (Q/K/V)
// scales with those measured in the step's training forward pass. The policy
// then generates with the new weights and scales; one engine serves both
// sides, so with equal recipes logp_old equals the generator's log-probs bit
// for bit.
//
// Usage:
//   Trainer trainer(policy, options);
//   for (...) {
//     std::vector<uint64_t> seeds = trainer.next_seeds(prompts.count);
//     auto rollouts = rollout::generate(policy, prompts, seeds, sampling);
//     TrainBatch batch = ...;             // prompts + completions, logp_gen, rewards
//     StepMetrics m = trainer.step(batch);
//   }
//   save_training_state("state.safetensors", trainer.state());
//
// Thread safety: none; the C API serializes calls on the policy's context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/policy/calibration.h"
#include "core/policy/policy.h"
#include "core/rollout/token_sequences.h"
#include "core/train/adamw.h"
#include "core/train/advantages.h"
#include "core/train/loss_options.h"
#include "core/train/lr_schedule.h"
#include "core/train/mismatch_metrics.h"
#include "core/train/token_losses.h"
#include "core/train/training_state.h"

namespace fp8rl::train {

struct TrainerOptions {
  LossOptions loss;
  AdvantageOptions advantages;  // used when a batch brings rewards
  AdamWOptions optimizer;
  LrSchedule schedule;
  double max_grad_norm = 1.0;  // global L2 clipping; 0 turns it off
  // Training log-probs are taken under softmax(logits / temperature) over
  // the whole vocabulary: use the generation temperature, and top_k = 0,
  // top_p = 1 for log-probs that match the generator's exactly.
  float temperature = 1.0f;
  // Bound on the tokens of one micro-batch (its activations are kept for the
  // backward); a longer sequence is a micro-batch of its own.
  int64_t micro_batch_tokens = 2048;
  bool recalibrate_after_step = true;
  policy::CalibrationOptions calibration;
  uint64_t seed = 0;  // of next_seeds()
};

// Throws invalid_argument naming the field.
void validate_trainer_options(const TrainerOptions& options);

// One batch of sequences (prompt then completion). Per-token arrays cover the
// completion tokens only, sequence after sequence (as rollouts lay them out).
struct TrainBatch {
  rollout::TokenSequences sequences;
  const int64_t* prompt_lengths = nullptr;  // [count], in [1, length]
  const float* logp_gen = nullptr;          // generator's log-probs; needed for importance weighting, else optional
  const float* logp_ref = nullptr;          // reference policy's log-probs; needed for the KL penalty, else optional
  // Policy-gradient losses take exactly one of: rewards (advantages then come
  // from TrainerOptions::advantages) or advantages, per sequence.
  const float* rewards = nullptr;
  const float* advantages = nullptr;
  double generation_seconds = 0.0;  // the host's generation time, for the time breakdown
};

struct StepSeconds {
  double generation = 0.0;     // as the batch reported it
  double recompute = 0.0;      // logp_old
  double train = 0.0;          // forward, backward and optimizer
  double recalibration = 0.0;  // requantization and attention scales
  double total() const { return generation + recompute + train + recalibration; }
};

struct StepMetrics {
  int64_t step = 0;      // steps taken, this one included
  bool skipped = false;  // non-finite gradient: weights, optimizer state and scales untouched
  std::string skip_reason;
  double loss = 0.0;
  double grad_norm = 0.0;  // before clipping
  bool clipped = false;
  double learning_rate = 0.0;
  LossStats loss_stats;       // clip fraction, ratio, KL to the reference, importance weights
  double entropy = 0.0;       // mean over completion tokens
  bool has_mismatch = false;  // logp_gen was given
  MismatchMetrics mismatch;
  double reward_mean = 0.0;  // when rewards were given
  int64_t sequences = 0;
  int64_t completion_tokens = 0;
  int64_t trained_tokens = 0;      // tokens through the forward and backward passes
  double tokens_per_second = 0.0;  // trained_tokens / seconds.train
  StepSeconds seconds;
  double recalibration_fraction = 0.0;  // seconds.recalibration / seconds.total()
};

// The loss and gradient of a batch without an update (tests, oracles).
struct BatchGradients {
  LossResult loss;
  std::vector<float> logp;                // [completion tokens] training forward's log-probs
  std::vector<std::vector<float>> grads;  // per tensor, model::for_each_tensor order
};

class Trainer {
 public:
  // The policy must outlive the trainer; it is trained in place.
  Trainer(policy::Policy& policy, const TrainerOptions& options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  const TrainerOptions& options() const { return options_; }
  int64_t steps() const { return steps_; }

  // One RL (or SFT) step. Bad input throws before anything changes; a step
  // whose gradient is not finite is reported as skipped.
  StepMetrics step(const TrainBatch& batch);
  BatchGradients gradients(const TrainBatch& batch);
  // The completion tokens' log-probs under the training distribution.
  std::vector<float> recompute_logprobs(const rollout::TokenSequences& sequences,
                                        const std::vector<int64_t>& prompt_lengths);
  // Requantizes every compute copy of the weights from the master weights,
  // and applies the attention scales measured in the last step's training
  // forward pass, when there is one. Returns its seconds.
  double recalibrate();

  struct Memory {
    int64_t gradients = 0, optimizer_state = 0, backward_weights = 0;
  };
  Memory memory() const;

  // Seeds for the next n rollouts, from (options.seed, counter): part of the state.
  std::vector<uint64_t> next_seeds(int64_t n);

  TrainingState state();
  // Validates everything (same model config; moments, scales, recipe) before
  // changing anything, then replaces the policy's weights, recipe and scales
  // and the optimizer state.
  void restore(const TrainingState& state);

 private:
  struct Prepared;
  struct Accumulated;
  Prepared prepare(const TrainBatch& batch, bool recompute);
  Accumulated accumulate(const Prepared& prepared);
  void rebuild_transposed();

  policy::Policy& policy_;
  TrainerOptions options_;
  AdamW optimizer_;
  int64_t steps_ = 0;
  uint64_t rng_counter_ = 0;
  struct Engine;  // the backward machinery and its buffers
  std::unique_ptr<Engine> engine_;
};

}  // namespace fp8rl::train
