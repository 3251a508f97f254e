#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api_guard.h"
#include "core/dist/memory_plan.h"
#include "core/train/trainer.h"
#include "core/train/training_state.h"
#include "enum_mapping.h"
#include "handles.h"
#include "memory_report_convert.h"
#include "options_convert.h"
#include "sequence_arrays.h"
#include "struct_output.h"

using namespace fp8rl::capi;
namespace train = fp8rl::train;

namespace {

fp8rl_trainer_options default_trainer_options() {
  const train::TrainerOptions d;
  fp8rl_trainer_options o{};
  o.struct_size = sizeof(o);
  o.loss = static_cast<fp8rl_loss_kind>(d.loss.kind);
  o.clip_low = d.loss.clip_low;
  o.clip_high = d.loss.clip_high;
  o.importance = to_public(d.loss.importance);
  o.kl_coefficient = d.loss.kl_coefficient;
  o.kl_estimator = static_cast<fp8rl_kl_estimator>(d.loss.kl_estimator);
  o.aggregation = static_cast<fp8rl_aggregation>(d.loss.aggregation);
  o.group_size = static_cast<int32_t>(d.advantages.group_size);
  o.baseline = static_cast<fp8rl_advantage_baseline>(d.advantages.baseline);
  o.normalize_by_std = d.advantages.normalize_by_std ? 1 : 0;
  o.sample_std = d.advantages.sample_std ? 1 : 0;
  o.advantage_epsilon = d.advantages.epsilon;
  o.learning_rate = d.schedule.base_lr;
  o.schedule = static_cast<fp8rl_lr_schedule>(d.schedule.kind);
  o.warmup_steps = d.schedule.warmup_steps;
  o.total_steps = d.schedule.total_steps;
  o.min_lr_ratio = d.schedule.min_lr_ratio;
  o.beta1 = d.optimizer.beta1;
  o.beta2 = d.optimizer.beta2;
  o.adam_epsilon = d.optimizer.eps;
  o.weight_decay = d.optimizer.weight_decay;
  o.max_grad_norm = d.max_grad_norm;
  o.temperature = d.temperature;
  o.micro_batch_tokens = d.micro_batch_tokens;
  o.recalibrate_after_step = d.recalibrate_after_step ? 1 : 0;
  o.calibration = to_public(d.calibration);
  o.seed = d.seed;
  o.minibatches = d.minibatches;
  o.router_aux_loss_coef = d.router_aux_loss_coef;
  o.routing_replay = d.routing_replay ? 1 : 0;
  o.freeze_attention_scales = d.freeze_attention_scales ? 1 : 0;
  return o;
}

// An enum field's value, checked against its valid values.
// raw() reads the caller's integer; only a listed value becomes an enum.
template <class Internal, class Public>
Internal enum_from(Public value, std::initializer_list<int32_t> valid, const char* field) {
  const int32_t v = raw(value);
  fp8rl::require(std::find(valid.begin(), valid.end(), v) != valid.end(),
                 std::string("options->") + field + " is " + std::to_string(v) + ", not one of its enum's values");
  return static_cast<Internal>(v);
}

// The core validates the values (validate_trainer_options); this checks the enums.
train::TrainerOptions trainer_options_from(const fp8rl_trainer_options* given) {
  const fp8rl_trainer_options defaults = default_trainer_options();
  const fp8rl_trainer_options o = read_options(given, defaults, "options");
  train::TrainerOptions t;
  t.loss.kind = enum_from<train::LossKind>(o.loss, {0, 1}, "loss");
  t.loss.clip_low = o.clip_low;
  t.loss.clip_high = o.clip_high;
  t.loss.importance = importance_from(read_embedded_options(o.importance, defaults.importance, "options->importance"),
                                      "options->importance");
  t.loss.kl_coefficient = o.kl_coefficient;
  t.loss.kl_estimator = enum_from<train::KlEstimator>(o.kl_estimator, {1, 3}, "kl_estimator");
  t.loss.aggregation = enum_from<train::Aggregation>(o.aggregation, {0, 1}, "aggregation");
  t.advantages.group_size = o.group_size;
  t.advantages.baseline = enum_from<train::AdvantageBaseline>(o.baseline, {0, 1}, "baseline");
  t.advantages.normalize_by_std = o.normalize_by_std != 0;
  t.advantages.sample_std = o.sample_std != 0;
  // Checked here, where the C name is known, so that create refuses it: the
  // core checks it only when a batch brings rewards.
  fp8rl::require(std::isfinite(o.advantage_epsilon) && o.advantage_epsilon >= 0.0,
                 "options->advantage_epsilon is " + std::to_string(o.advantage_epsilon) + "; expected finite and >= 0");
  t.advantages.epsilon = o.advantage_epsilon;
  t.schedule.base_lr = o.learning_rate;
  t.schedule.kind = enum_from<train::LrScheduleKind>(o.schedule, {0, 1, 2}, "schedule");
  t.schedule.warmup_steps = o.warmup_steps;
  t.schedule.total_steps = o.total_steps;
  t.schedule.min_lr_ratio = o.min_lr_ratio;
  t.optimizer.beta1 = o.beta1;
  t.optimizer.beta2 = o.beta2;
  t.optimizer.eps = o.adam_epsilon;
  t.optimizer.weight_decay = o.weight_decay;
  t.max_grad_norm = o.max_grad_norm;
  t.temperature = o.temperature;
  t.micro_batch_tokens = o.micro_batch_tokens;
  t.recalibrate_after_step = o.recalibrate_after_step != 0;
  t.calibration = calibration_from(read_embedded_options(o.calibration, defaults.calibration, "options->calibration"));
  t.seed = o.seed;
  t.minibatches = o.minibatches;
  t.router_aux_loss_coef = o.router_aux_loss_coef;
  t.routing_replay = o.routing_replay != 0;
  t.freeze_attention_scales = o.freeze_attention_scales != 0;
  return t;
}

fp8rl_train_batch default_train_batch() {
  fp8rl_train_batch batch{};
  batch.struct_size = sizeof(batch);
  return batch;
}

// The expert choices a batch of these sequences must bring for a policy of `config`.
int64_t expected_expert_choices(const fp8rl::rollout::TokenSequences& sequences,
                                const fp8rl::model::ModelConfig& config) {
  int64_t fed = 0;
  for (int64_t i = 0; i < sequences.count; ++i) fed += sequences.length(i) - 1;
  return fed * fp8rl::model::sparse_layer_count(config) * config.moe.num_experts_per_tok;
}

// The batch as the core takes it; the per-token counts are checked here,
// where the C arrays' lengths are known.
train::TrainBatch train_batch_from(const fp8rl_train_batch& b, const fp8rl::model::ModelConfig& config) {
  const auto sequences =
      sequences_from(b.tokens, b.offsets, b.num_sequences, "batch->tokens", "batch->offsets", "batch->num_sequences");
  fp8rl::require(b.prompt_lengths != nullptr, "batch->prompt_lengths is NULL");
  const int64_t expected = completion_tokens(sequences, b.prompt_lengths);
  fp8rl::require(expected < 0 || expected == b.num_completion_tokens,
                 "batch->num_completion_tokens is " + std::to_string(b.num_completion_tokens) +
                     " but the sequences hold " + std::to_string(expected) + " completion tokens");
  fp8rl::require(b.generation_seconds >= 0.0, "batch->generation_seconds must be >= 0");
  if (b.experts != nullptr && fp8rl::model::sparse_layer_count(config) > 0) {
    const int64_t choices = expected_expert_choices(sequences, config);
    fp8rl::require(b.num_expert_choices == choices, "batch->num_expert_choices is " +
                                                        std::to_string(b.num_expert_choices) + " but the sequences' " +
                                                        "fed tokens, sparse layers and k make " +
                                                        std::to_string(choices));
  }
  train::TrainBatch batch;
  batch.sequences = sequences;
  batch.prompt_lengths = b.prompt_lengths;
  batch.logp_gen = b.logp_gen;
  batch.logp_ref = b.logp_ref;
  batch.rewards = b.rewards;
  batch.advantages = b.advantages;
  batch.generation_seconds = b.generation_seconds;
  batch.logp_old = b.logp_old;
  batch.experts = b.experts;
  return batch;
}

// Cross-entropy reads no per-sequence values: a batch that brings them was
// meant for another loss, so it is refused rather than silently trained on.
void check_arrays_fit_loss(const train::TrainerOptions& options, const fp8rl_train_batch& b) {
  if (options.loss.kind != train::LossKind::cross_entropy) return;
  for (const auto& [array, name] : {std::pair{b.rewards, "rewards"}, std::pair{b.advantages, "advantages"}}) {
    fp8rl::require(array == nullptr, std::string("batch->") + name +
                                         " is given, but the cross-entropy loss takes neither rewards nor advantages");
  }
}

fp8rl_train_metrics to_public(const train::StepMetrics& m) {
  fp8rl_train_metrics r{};
  r.step = m.step;
  r.skipped = static_cast<int32_t>(m.skipped);
  r.clipped = static_cast<int32_t>(m.clipped);
  r.loss = m.loss;
  r.grad_norm = m.grad_norm;
  r.learning_rate = m.learning_rate;
  r.clip_fraction = m.loss_stats.clip_fraction;
  r.ratio_mean = m.loss_stats.ratio_mean;
  r.entropy = m.entropy;
  r.kl_k1 = m.loss_stats.kl_k1_mean;
  r.kl_k3 = m.loss_stats.kl_k3_mean;
  r.reward_mean = m.reward_mean;
  r.has_mismatch = m.has_mismatch ? 1 : 0;
  r.token_mult_prob_error = m.mismatch.token_mult_prob_error;
  r.gen_kl_error = m.mismatch.gen_kl_error;
  r.is_weight_mean = m.has_mismatch ? m.mismatch.is_weight_mean : m.loss_stats.is_weight_mean;
  r.is_truncated_fraction = m.mismatch.is_truncated_fraction;
  r.is_masked_fraction = m.mismatch.is_masked_fraction;
  r.sequences = m.sequences;
  r.completion_tokens = m.completion_tokens;
  r.trained_tokens = m.trained_tokens;
  r.tokens_per_second = m.tokens_per_second;
  r.generation_seconds = m.seconds.generation;
  r.recompute_seconds = m.seconds.recompute;
  r.train_seconds = m.seconds.train;
  r.recalibration_seconds = m.seconds.recalibration;
  r.recalibration_fraction = m.recalibration_fraction;
  r.ratio_min = m.loss_stats.ratio_min;
  r.ratio_max = m.loss_stats.ratio_max;
  r.old_policy_kl = m.loss_stats.old_kl_k3_mean;
  r.minibatches = m.minibatches;
  r.bytes_reduced = m.communication.bytes_reduced;
  r.bytes_gathered = m.communication.bytes_gathered;
  r.communication_seconds = m.communication.seconds;
  r.routing_choices = m.routing_choices;
  r.routing_agreement = m.routing_agreement;
  r.router_aux_loss = m.router_aux_loss;
  return r;
}

// The documented bound of fp8rl_trainer_next_seeds(): more than any run
// draws at once, and small enough that count * 8 bytes is a real array.
constexpr int64_t kMaxSeedsPerCall = INT32_MAX;

std::string minibatch_name(size_t k) { return "out_minibatches[" + std::to_string(k) + "]"; }

void log_skipped(fp8rl_trainer* trainer, const train::StepMetrics& metrics) {
  if (!metrics.skipped) return;
  trainer->policy->context->impl.logger().log(
      fp8rl::LogLevel::warning, "training step " + std::to_string(metrics.step) + " skipped: " + metrics.skip_reason);
}

std::mutex& mutex_of(const fp8rl_trainer* trainer) {
  fp8rl::require(trainer != nullptr, "trainer is NULL");
  return trainer->policy->context->impl.mutex();
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_trainer_options_init(fp8rl_trainer_options* options) {
  return guarded(__func__, [&] {
    fp8rl::require(options != nullptr, "options is NULL");
    *options = default_trainer_options();
  });
}

FP8RL_API fp8rl_status fp8rl_train_batch_init(fp8rl_train_batch* batch) {
  return guarded(__func__, [&] {
    fp8rl::require(batch != nullptr, "batch is NULL");
    *batch = default_train_batch();
  });
}

FP8RL_API fp8rl_status fp8rl_train_metrics_init(fp8rl_train_metrics* metrics) {
  return guarded(__func__, [&] { init_struct(metrics, "metrics"); });
}

FP8RL_API fp8rl_status fp8rl_trainer_create(fp8rl_policy* policy, const fp8rl_trainer_options* options,
                                            fp8rl_trainer** out_trainer) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    fp8rl::require(out_trainer != nullptr, "out_trainer is NULL");
    const train::TrainerOptions resolved = trainer_options_from(options);
    train::validate_trainer_options(resolved);
    auto handle = std::make_unique<fp8rl_trainer>();
    handle->policy = policy;
    {
      const std::lock_guard<std::mutex> lock(policy->context->impl.mutex());
      handle->impl = std::make_unique<train::Trainer>(impl, resolved);
    }
    ++policy->live_trainers;
    *out_trainer = handle.release();
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_destroy(fp8rl_trainer* trainer) {
  return guarded(__func__, [&] {
    if (trainer == nullptr) return;
    fp8rl_policy* policy = trainer->policy;
    {
      const std::lock_guard<std::mutex> lock(mutex_of(trainer));
      delete trainer;  // frees gradients and scratch through the context's backend
    }
    --policy->live_trainers;
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_memory(const fp8rl_trainer* trainer, fp8rl_memory_report* out_report) {
  return guarded(__func__, [&] {
    const auto& impl = trainer_of(trainer);
    fp8rl::require(out_report != nullptr, "out_report is NULL");
    fp8rl::dist::MemoryReport report;
    {
      const std::lock_guard<std::mutex> lock(mutex_of(trainer));
      report = fp8rl::dist::trainer_memory(policy_of(trainer->policy), impl);
    }
    write_struct(out_report, to_public(report), "out_report");
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_step(fp8rl_trainer* trainer, const fp8rl_train_batch* batch,
                                          fp8rl_train_metrics* out_metrics) {
  return guarded(__func__, [&] {
    auto& impl = trainer_of(trainer);
    check_out_struct(out_metrics, "out_metrics");
    const fp8rl_train_batch given = read_options(batch, default_train_batch(), "batch");
    check_arrays_fit_loss(impl.options(), given);
    const train::TrainBatch core_batch = train_batch_from(given, policy_of(trainer->policy).config());
    train::StepMetrics metrics;
    {
      const std::lock_guard<std::mutex> lock(mutex_of(trainer));
      metrics = impl.step(core_batch);
    }
    log_skipped(trainer, metrics);
    write_struct(out_metrics, to_public(metrics), "out_metrics");
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_iterate(fp8rl_trainer* trainer, const fp8rl_train_batch* batch,
                                             fp8rl_train_metrics* out_iteration, fp8rl_train_metrics* out_minibatches,
                                             int64_t capacity) {
  return guarded(__func__, [&] {
    auto& impl = trainer_of(trainer);
    fp8rl::require(out_minibatches != nullptr || capacity == 0, "out_minibatches is NULL but capacity is not 0");
    const int64_t steps = impl.options().minibatches;
    fp8rl::require(
        out_minibatches == nullptr || capacity >= steps,
        "capacity is " + std::to_string(capacity) + " but the options take " + std::to_string(steps) + " mini-batches");
    // Every struct_size is checked before the iteration changes anything.
    check_out_struct(out_iteration, "out_iteration");
    for (int64_t k = 0; out_minibatches != nullptr && k < steps; ++k) {
      check_out_struct(&out_minibatches[k], minibatch_name(k).c_str());
    }
    const fp8rl_train_batch given = read_options(batch, default_train_batch(), "batch");
    check_arrays_fit_loss(impl.options(), given);
    const train::TrainBatch core_batch = train_batch_from(given, policy_of(trainer->policy).config());
    train::IterationMetrics metrics;
    {
      const std::lock_guard<std::mutex> lock(mutex_of(trainer));
      metrics = impl.iterate(core_batch);
    }
    for (const train::StepMetrics& step : metrics.minibatches) log_skipped(trainer, step);
    write_struct(out_iteration, to_public(metrics.total), "out_iteration");
    for (size_t k = 0; out_minibatches != nullptr && k < metrics.minibatches.size(); ++k) {
      write_struct(&out_minibatches[k], to_public(metrics.minibatches[k]), minibatch_name(k).c_str());
    }
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_recompute_logprobs(fp8rl_trainer* trainer, const int32_t* tokens,
                                                        const int64_t* offsets, int64_t num_sequences,
                                                        const int64_t* prompt_lengths, float* logprobs,
                                                        int64_t capacity) {
  return guarded(__func__, [&] {
    auto& impl = trainer_of(trainer);
    const auto sequences = sequences_from(tokens, offsets, num_sequences, "tokens", "offsets", "num_sequences");
    fp8rl::require(prompt_lengths != nullptr, "prompt_lengths is NULL");
    fp8rl::require(logprobs != nullptr || capacity == 0, "logprobs is NULL");
    const int64_t expected = completion_tokens(sequences, prompt_lengths);
    if (expected >= 0) check_capacity(capacity, expected, "the completions hold");
    const std::vector<int64_t> lengths(prompt_lengths, prompt_lengths + num_sequences);
    std::vector<float> scores;
    {
      const std::lock_guard<std::mutex> lock(mutex_of(trainer));
      scores = impl.recompute_logprobs(sequences, lengths);
    }
    check_capacity(capacity, static_cast<int64_t>(scores.size()), "the completions hold");
    std::copy(scores.begin(), scores.end(), logprobs);
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_recalibrate(fp8rl_trainer* trainer, double* out_seconds) {
  return guarded(__func__, [&] {
    auto& impl = trainer_of(trainer);
    double seconds = 0.0;
    {
      const std::lock_guard<std::mutex> lock(mutex_of(trainer));
      seconds = impl.recalibrate();
    }
    if (out_seconds != nullptr) *out_seconds = seconds;
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_gather_weights(fp8rl_trainer* trainer) {
  return guarded(__func__, [&] {
    auto& impl = trainer_of(trainer);
    const std::lock_guard<std::mutex> lock(mutex_of(trainer));
    impl.gather_masters();
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_next_seeds(fp8rl_trainer* trainer, int64_t count, uint64_t* seeds) {
  return guarded(__func__, [&] {
    auto& impl = trainer_of(trainer);
    fp8rl::require(count >= 0 && count <= kMaxSeedsPerCall, "count is " + std::to_string(count) +
                                                                "; expected 0 to " + std::to_string(kMaxSeedsPerCall));
    fp8rl::require(seeds != nullptr || count == 0, "seeds is NULL");
    // Drawn in chunks: the stream is counter-based, so chunks give the seeds
    // one draw would, without a library copy the size of the caller's array.
    constexpr int64_t kChunk = 4096;
    const std::lock_guard<std::mutex> lock(mutex_of(trainer));
    for (int64_t done = 0; done < count; done += kChunk) {
      const std::vector<uint64_t> drawn = impl.next_seeds(std::min(kChunk, count - done));
      std::copy(drawn.begin(), drawn.end(), seeds + done);
    }
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_save_state(fp8rl_trainer* trainer, const char* path) {
  return guarded(__func__, [&] {
    auto& impl = trainer_of(trainer);
    require_path(path, "path");
    const std::lock_guard<std::mutex> lock(mutex_of(trainer));
    impl.save(path);  // with N ranks: collective, each rank writes its shard
  });
}

FP8RL_API fp8rl_status fp8rl_trainer_load_state(fp8rl_trainer* trainer, const char* path) {
  return guarded(__func__, [&] {
    auto& impl = trainer_of(trainer);
    require_path(path, "path");
    const std::lock_guard<std::mutex> lock(mutex_of(trainer));
    impl.load(path);  // read and validated before anything changes
  });
}

}  // extern "C"
