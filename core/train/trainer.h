// RL training iterations on a policy, in the policy's own recipe. One
// iteration takes one rollout batch and splits its sequences into
// `minibatches` consecutive mini-batches, each one optimizer step (PPO's
// mini-batches; NeMo RL's train_global_batch_size, verl's
// ppo_mini_batch_size):
//   1. once per iteration, before any update: logp_old (the policy before the
//      iteration: given by the host, or the first mini-batch's own training
//      forward plus one scoring pass over the other mini-batches; with one
//      mini-batch no separate pass runs at all), the mismatch metrics against
//      logp_gen, and the advantages from rewards (or the host's);
//   2. per mini-batch: the loss's forward and backward over micro-batches of
//      at most micro_batch_tokens (FP8 fprop, dgrad and wgrad under an FP8
//      recipe; importance weights w = exp(logp_old - logp_gen) fixed by step
//      1, so from the second mini-batch on the ratio departs from 1 and the
//      clip acts), global gradient-norm clipping, an AdamW step on the FP32
//      master weights, then recalibration: every compute copy of the weights
//      is requantized with fresh block scales and (unless
//      freeze_attention_scales) the attention (Q/K/V) scales are replaced by
//      those measured in the mini-batch's training forward pass.
// The policy then generates with the new weights and scales; one engine
// serves both sides, so with equal recipes logp_old equals the generator's
// log-probs bit for bit.
//
// Usage:
//   Trainer trainer(policy, options);        // options.minibatches = 4
//   for (...) {
//     std::vector<uint64_t> seeds = trainer.next_seeds(prompts.count);
//     auto rollouts = rollout::generate(policy, prompts, seeds, sampling);
//     TrainBatch batch = ...;             // prompts + completions, logp_gen, rewards
//     IterationMetrics m = trainer.iterate(batch);
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
#include "core/train/adamw.h"  // AdamWOptions
#include "core/train/advantages.h"
#include "core/train/loss_options.h"
#include "core/train/lr_schedule.h"
#include "core/train/mismatch_metrics.h"
#include "core/train/param_arena.h"
#include "core/train/step_metrics.h"
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
  // Optimizer steps per iterate(): the batch's sequences in this many
  // consecutive mini-batches of near-equal count (the first ones one longer).
  int64_t minibatches = 1;
  bool recalibrate_after_step = true;
  // Keeps the policy's Q/K/V scales through training (recalibration then
  // only requantizes the weights): FP8 KV-cache scales fixed once, as an
  // engine that calibrates only at load time keeps them.
  bool freeze_attention_scales = false;
  policy::CalibrationOptions calibration;
  uint64_t seed = 0;  // of next_seeds()
  // Mixture-of-Experts policies. The load-balancing loss's weight in the
  // loss (training_pass.h; Hugging Face's router_aux_loss_coef): 0 by
  // default, as NeMo RL and slime train RL, since it perturbs the log-probs.
  double router_aux_loss_coef = 0.0;
  // Routing replay: the training forward uses the batch's recorded experts
  // (TrainBatch::experts, which it then needs) instead of its router's,
  // with the gate weights its own router gives them. For generation and
  // training in different recipes; with one recipe both route alike anyway.
  bool routing_replay = false;
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
  // The policy before the iteration, used as given; null: computed (see the top of this file).
  const float* logp_old = nullptr;
  // Policy-gradient losses take exactly one of: rewards (advantages then come
  // from TrainerOptions::advantages) or advantages, per sequence.
  const float* rewards = nullptr;
  const float* advantages = nullptr;
  double generation_seconds = 0.0;  // the host's generation time, for the time breakdown
  // Mixture-of-Experts policies: the generator's expert choices, [fed
  // tokens, sparse layers, k] with fed tokens sequence after sequence, each
  // sequence's length - 1 positions (Rollout::experts laid end to end).
  // Needed for routing replay, else optional (routing_agreement).
  const int32_t* experts = nullptr;
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

  // One iteration of options().minibatches optimizer steps. Bad input
  // throws before anything changes; a step whose gradient is not finite is
  // reported as skipped and the iteration goes on with the next mini-batch.
  IterationMetrics iterate(const TrainBatch& batch);
  // The one-mini-batch iteration, whatever options().minibatches says.
  StepMetrics step(const TrainBatch& batch);
  BatchGradients gradients(const TrainBatch& batch);
  // The completion tokens' log-probs under the training distribution.
  std::vector<float> recompute_logprobs(const rollout::TokenSequences& sequences,
                                        const std::vector<int64_t>& prompt_lengths);
  // Requantizes every compute copy of the weights from the master weights,
  // and applies the attention scales measured in the last step's training
  // forward pass, when there is one. Returns its seconds.
  double recalibrate();

  // Bytes on the backend: the arena's buffers (gaps included) and the transposed weights.
  struct Memory {
    int64_t master_weights = 0, gradients = 0, optimizer_state = 0, backward_weights = 0;
  };
  Memory memory() const;
  // The master weights, gradients and moments (tests, collectives).
  const ParamArena& arena() const;

  // Seeds for the next n rollouts, from (options.seed, counter): part of the state.
  std::vector<uint64_t> next_seeds(int64_t n);

  TrainingState state();
  // Data parallelism: after a step each rank's master weights are current in
  // its own shard only (the compute copies are whole); this collective
  // gathers them so that the policy's master weights can be read. Every rank
  // must call it; a no-op when they are whole. state() calls it.
  void gather_masters();
  // Writes a checkpoint at path: with one rank the training-state file of
  // training_state.h; with N ranks (collective) the set of checkpoint_set.h:
  // each rank its optimizer shard, rank 0 the weights and then the manifest.
  // An error on any rank fails the save on every rank, naming the rank.
  void save(const std::string& path);
  // Loads a checkpoint of either kind, whatever world size wrote it (each
  // rank takes its own shard of the moments); everything is read and
  // validated before anything changes.
  void load(const std::string& path);
  // Validates everything (same model config; moments, scales, recipe) before
  // changing anything, then replaces the policy's weights, recipe and scales
  // and the optimizer state.
  void restore(const TrainingState& state);

 private:
  struct Prepared;
  struct Slice;
  struct Accumulated;
  IterationMetrics run_iteration(const TrainBatch& batch, int64_t minibatches);
  Prepared prepare(const TrainBatch& batch, int64_t minibatches);
  Prepared prepare_on_every_rank(const TrainBatch& batch, int64_t minibatches);
  void start_in_step();
  TrainingState weights_and_counters();  // state() without the moments
  void complete_logp_old(Prepared& prepared);
  Accumulated accumulate(Prepared& prepared, const Slice& slice);
  StepMetrics optimizer_step(const Accumulated& accumulated);
  std::string first_non_finite_gradient();
  void attach();
  void rebuild_transposed();

  policy::Policy& policy_;
  TrainerOptions options_;
  int64_t optimizer_steps_ = 0;  // AdamW's t: steps not skipped
  int64_t steps_ = 0;
  uint64_t rng_counter_ = 0;
  struct Engine;  // the backward machinery and its buffers
  std::unique_ptr<Engine> engine_;
};

}  // namespace fp8rl::train
