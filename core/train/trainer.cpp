#include "core/train/trainer.h"

#include <chrono>
#include <cmath>
#include <string>

#include "core/rollout/rollout.h"
#include "core/train/grad_clip.h"
#include "core/train/model_grads.h"
#include "core/train/training_pass.h"
#include "core/train/transposed_model.h"
#include "kernels/common/counter_rng.h"

namespace fp8rl::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Backend& backend, Clock::time_point start) {
  backend.synchronize();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<size_t> tensor_sizes(policy::Policy& policy) {
  std::vector<size_t> sizes;
  model::for_each_tensor(policy.mutable_params(), [&](const std::string&, const std::vector<int64_t>&,
                                                      model::HostTensor& t) { sizes.push_back(t.data.size()); });
  return sizes;
}

// Token-weighted merge of a micro-batch's loss statistics into the batch's.
void merge_stats(LossStats& total, const LossStats& part) {
  const double before = static_cast<double>(total.tokens), added = static_cast<double>(part.tokens);
  const double all = before + added;
  if (all > 0.0) {
    auto mix = [&](double& into, double value) { into = (into * before + value * added) / all; };
    mix(total.clip_fraction, part.clip_fraction);
    mix(total.ratio_mean, part.ratio_mean);
    mix(total.is_weight_mean, part.is_weight_mean);
    mix(total.is_truncated_fraction, part.is_truncated_fraction);
    mix(total.is_masked_fraction, part.is_masked_fraction);
    mix(total.is_non_finite_fraction, part.is_non_finite_fraction);
    mix(total.kl_k1_mean, part.kl_k1_mean);
    mix(total.kl_k3_mean, part.kl_k3_mean);
  }
  total.tokens += part.tokens;
  total.sequences += part.sequences;
  total.is_masked_sequences += part.is_masked_sequences;
}

std::string tensor_name(policy::Policy& policy, size_t slot) {
  std::string name;
  size_t i = 0;
  model::for_each_tensor(policy.mutable_params(),
                         [&](const std::string& n, const std::vector<int64_t>&, model::HostTensor&) {
                           if (i++ == slot) name = n;
                         });
  return name;
}

}  // namespace

void validate_trainer_options(const TrainerOptions& options) {
  validate_loss_options(options.loss);
  validate_adamw_options(options.optimizer);
  validate_lr_schedule(options.schedule);
  policy::validate_calibration_options(options.calibration);
  require(
      std::isfinite(options.max_grad_norm) && options.max_grad_norm >= 0.0,
      "trainer: max_grad_norm must be finite and >= 0 (0: no clipping), got " + std::to_string(options.max_grad_norm));
  require(std::isfinite(options.temperature) && options.temperature > 0.0f,
          "trainer: temperature must be finite and > 0, got " + std::to_string(options.temperature));
  require(options.micro_batch_tokens >= 1,
          "trainer: micro_batch_tokens must be >= 1, got " + std::to_string(options.micro_batch_tokens));
  require(options.advantages.group_size >= 1,
          "trainer: advantages.group_size must be >= 1, got " + std::to_string(options.advantages.group_size));
}

// The backward machinery and its buffers.
struct Trainer::Engine {
  Engine(policy::Policy& policy)
      : grads(policy.context().backend(), policy.mutable_params()),
        transposed(std::make_unique<TransposedModel>(policy.context().backend(), policy.compiled())),
        transposed_recipe(policy.recipe()),
        pass(policy),
        statistics(policy.context().backend(), policy.config()) {}

  ModelGrads grads;
  std::unique_ptr<TransposedModel> transposed;
  policy::Recipe transposed_recipe;
  TrainingPass pass;
  policy::AttentionStatistics statistics;  // of the last step's training forward
  std::vector<std::vector<float>> host_grads;
};

// A validated batch with everything the loss reads, per completion token.
struct Trainer::Prepared {
  rollout::TokenSequences sequences;
  std::vector<int64_t> prompt_lengths;
  std::vector<int64_t> offsets;  // [count + 1] completion-token offsets
  std::vector<float> logp_old;   // empty unless recomputed
  std::vector<float> advantages;
  const float* logp_gen = nullptr;
  const float* logp_ref = nullptr;
  double reward_mean = 0.0;
  double recompute_seconds = 0.0;
  int64_t fed_tokens = 0;

  int64_t count() const { return sequences.count; }
  int64_t completion_tokens() const { return offsets.back(); }
};

struct Trainer::Accumulated {
  LossResult loss;
  std::vector<float> logp;
  std::vector<float> entropy;
};

Trainer::Trainer(policy::Policy& policy, const TrainerOptions& options)
    : policy_(policy), options_(options), optimizer_(options.optimizer, tensor_sizes(policy)) {
  validate_trainer_options(options);
  engine_ = std::make_unique<Engine>(policy);
}

Trainer::~Trainer() = default;

std::vector<float> Trainer::recompute_logprobs(const rollout::TokenSequences& sequences,
                                               const std::vector<int64_t>& prompt_lengths) {
  rollout::SamplingOptions scoring;
  scoring.temperature = options_.temperature;
  scoring.max_tokens_per_step = static_cast<int32_t>(std::min<int64_t>(options_.micro_batch_tokens, 1 << 30));
  return rollout::score_completions(policy_, sequences, prompt_lengths, scoring);
}

Trainer::Prepared Trainer::prepare(const TrainBatch& batch, bool recompute) {
  const model::ModelConfig& config = policy_.config();
  rollout::validate_sequences(batch.sequences, config.vocab_size, config.max_position_embeddings + 1, "sequence");
  require(batch.prompt_lengths != nullptr, "train batch: prompt_lengths is null");
  Prepared p;
  p.sequences = batch.sequences;
  p.offsets.push_back(0);
  for (int64_t i = 0; i < batch.sequences.count; ++i) {
    const int64_t prompt = batch.prompt_lengths[i], length = batch.sequences.length(i);
    require(prompt >= 1 && prompt <= length, "train batch: prompt length " + std::to_string(prompt) + " of sequence " +
                                                 std::to_string(i) + " must be in [1, " + std::to_string(length) + "]");
    p.prompt_lengths.push_back(prompt);
    p.offsets.push_back(p.offsets.back() + length - prompt);
    p.fed_tokens += length - 1;
  }
  const LossOptions& loss = options_.loss;
  const bool policy_gradient = loss.kind == LossKind::clipped_policy_gradient;
  require(!(policy_gradient && loss.importance.mode != ImportanceMode::off) || batch.logp_gen != nullptr,
          "train batch: importance weighting needs logp_gen");
  require(!(policy_gradient && loss.kl_coefficient > 0.0) || batch.logp_ref != nullptr,
          "train batch: the KL penalty needs logp_ref");
  p.logp_gen = batch.logp_gen;
  p.logp_ref = batch.logp_ref;
  if (policy_gradient) {
    require((batch.rewards == nullptr) != (batch.advantages == nullptr),
            "train batch: a policy-gradient loss needs exactly one of rewards and advantages");
    std::vector<float> per_sequence(static_cast<size_t>(p.count()));
    if (batch.rewards) {
      group_advantages(batch.rewards, p.count(), options_.advantages, per_sequence.data());
      double sum = 0.0;
      for (int64_t i = 0; i < p.count(); ++i) sum += batch.rewards[i];
      p.reward_mean = sum / static_cast<double>(p.count());
    } else {
      per_sequence.assign(batch.advantages, batch.advantages + p.count());
    }
    p.advantages.resize(static_cast<size_t>(p.completion_tokens()));
    broadcast_to_tokens(per_sequence.data(), p.offsets.data(), p.count(), p.advantages.data());
  }
  if (recompute && (policy_gradient || batch.logp_gen != nullptr)) {
    const Clock::time_point start = Clock::now();
    p.logp_old = recompute_logprobs(p.sequences, p.prompt_lengths);
    p.recompute_seconds = seconds_since(policy_.context().backend(), start);
  }
  return p;
}

Trainer::Accumulated Trainer::accumulate(const Prepared& p) {
  Engine& e = *engine_;
  if (!(e.transposed_recipe == policy_.recipe())) rebuild_transposed();
  e.grads.bind(policy_.mutable_params());
  e.grads.zero();
  e.statistics.clear();
  Accumulated result;
  result.logp.resize(static_cast<size_t>(p.completion_tokens()));
  result.entropy.resize(result.logp.size());

  LossScope scope;
  scope.tokens = p.completion_tokens();
  for (int64_t i = 0; i < p.count(); ++i) scope.sequences += p.offsets[i + 1] > p.offsets[i] ? 1 : 0;
  std::vector<float> grad_logp;
  int64_t begin = 0;
  while (begin < p.count()) {
    // Consecutive sequences within the token bound (at least one).
    int64_t end = begin + 1, tokens = p.sequences.length(begin) - 1;
    while (end < p.count() && tokens + p.sequences.length(end) - 1 <= options_.micro_batch_tokens)
      tokens += p.sequences.length(end++) - 1;
    const int64_t first = p.offsets[static_cast<size_t>(begin)];
    std::vector<float> logp =
        e.pass.forward(p.sequences, p.prompt_lengths, begin, end, options_.temperature, e.statistics.observer());
    std::copy(logp.begin(), logp.end(), result.logp.begin() + first);

    std::vector<int64_t> offsets;
    for (int64_t i = begin; i <= end; ++i) offsets.push_back(p.offsets[static_cast<size_t>(i)] - first);
    TokenBatch view;
    view.offsets = offsets.data();
    view.count = end - begin;
    view.logp = logp.data();
    if (!p.logp_old.empty()) view.logp_old = p.logp_old.data() + first;
    if (p.logp_gen) view.logp_gen = p.logp_gen + first;
    if (p.logp_ref) view.logp_ref = p.logp_ref + first;
    if (!p.advantages.empty()) view.advantages = p.advantages.data() + first;
    grad_logp.resize(logp.size());
    const LossResult part = evaluate_loss(view, options_.loss, grad_logp.data(), &scope);
    result.loss.loss += part.loss;
    merge_stats(result.loss.stats, part.stats);
    e.pass.backward(grad_logp.data(), *e.transposed, e.grads, result.entropy.data() + first);
    begin = end;
  }
  e.grads.download(e.host_grads);
  return result;
}

BatchGradients Trainer::gradients(const TrainBatch& batch) {
  const Prepared prepared = prepare(batch, true);
  Accumulated accumulated = accumulate(prepared);
  BatchGradients result;
  result.loss = accumulated.loss;
  result.logp = std::move(accumulated.logp);
  result.grads = engine_->host_grads;
  return result;
}

StepMetrics Trainer::step(const TrainBatch& batch) {
  Backend& backend = policy_.context().backend();
  StepMetrics m;
  m.seconds.generation = batch.generation_seconds;
  const Prepared p = prepare(batch, true);
  m.seconds.recompute = p.recompute_seconds;
  if (p.logp_gen && !p.logp_old.empty()) {
    TokenBatch whole;
    whole.offsets = p.offsets.data();
    whole.count = p.count();
    whole.logp_old = p.logp_old.data();
    whole.logp_gen = p.logp_gen;
    m.mismatch = mismatch_metrics(whole, options_.loss.importance);
    m.has_mismatch = true;
  }

  const Clock::time_point train_start = Clock::now();
  const Accumulated a = accumulate(p);
  std::vector<ParamSlot> slots;
  size_t slot = 0;
  model::for_each_tensor(
      policy_.mutable_params(), [&](const std::string&, const std::vector<int64_t>& shape, model::HostTensor& t) {
        // Weight decay on matrices (embeddings and head included), not on norms and biases.
        slots.push_back({t.data.data(), engine_->host_grads[slot++].data(), t.data.size(), shape.size() == 2});
      });
  GradClipResult clip;
  if (options_.max_grad_norm > 0.0) {
    clip = clip_grad_norm(slots, options_.max_grad_norm);
  } else {
    clip.norm = global_grad_norm(slots);
    clip.finite = std::isfinite(clip.norm);
  }
  m.learning_rate = learning_rate(options_.schedule, optimizer_.step_count());
  const AdamWStepResult update = optimizer_.step(slots, m.learning_rate, clip.scale);
  m.seconds.train = seconds_since(backend, train_start);
  ++steps_;

  m.skipped = update.skipped;
  if (update.skipped) {
    m.skip_reason = "non-finite gradient in " + tensor_name(policy_, update.bad_slot) + " at index " +
                    std::to_string(update.bad_index);
  } else if (options_.recalibrate_after_step) {
    m.seconds.recalibration = recalibrate();
  }

  m.step = steps_;
  m.loss = a.loss.loss;
  m.loss_stats = a.loss.stats;
  m.grad_norm = clip.norm;
  m.clipped = clip.clipped;
  double entropy = 0.0;
  for (float h : a.entropy) entropy += h;
  m.entropy = a.entropy.empty() ? 0.0 : entropy / static_cast<double>(a.entropy.size());
  m.reward_mean = p.reward_mean;
  m.sequences = p.count();
  m.completion_tokens = p.completion_tokens();
  m.trained_tokens = p.fed_tokens;
  m.tokens_per_second = m.seconds.train > 0.0 ? static_cast<double>(p.fed_tokens) / m.seconds.train : 0.0;
  const double total = m.seconds.total();
  m.recalibration_fraction = total > 0.0 ? m.seconds.recalibration / total : 0.0;
  return m;
}

void Trainer::rebuild_transposed() {
  engine_->transposed.reset();  // free before allocating the new copies
  engine_->transposed = std::make_unique<TransposedModel>(policy_.context().backend(), policy_.compiled());
  engine_->transposed_recipe = policy_.recipe();
}

double Trainer::recalibrate() {
  const Clock::time_point start = Clock::now();
  policy_.refit();
  engine_->transposed->refit(policy_.compiled());
  if (!engine_->statistics.empty()) policy_.set_attention_scales(engine_->statistics.scales(options_.calibration));
  return seconds_since(policy_.context().backend(), start);
}

Trainer::Memory Trainer::memory() const {
  Memory m;
  for (size_t i = 0; i < optimizer_.num_slots(); ++i) {
    const int64_t elements = static_cast<int64_t>(optimizer_.slot_size(i));
    m.gradients += elements * 4;
    m.optimizer_state += elements * 8;
  }
  m.backward_weights = engine_->transposed->bytes();
  return m;
}

std::vector<uint64_t> Trainer::next_seeds(int64_t n) {
  require(n >= 0, "next_seeds: n must be >= 0");
  std::vector<uint64_t> seeds(static_cast<size_t>(n));
  for (uint64_t& seed : seeds) seed = counter_random_bits(options_.seed, rng_counter_++);
  return seeds;
}

TrainingState Trainer::state() {
  TrainingState s;
  s.params = policy_.params();
  s.recipe = policy_.recipe();
  s.scales = policy_.attention_scales();
  if (optimizer_.step_count() > 0) {
    for (size_t i = 0; i < optimizer_.num_slots(); ++i) {
      const FloatSpan m = optimizer_.exp_avg(i), v = optimizer_.exp_avg_sq(i);
      s.exp_avg.emplace_back(m.data, m.data + m.size);
      s.exp_avg_sq.emplace_back(v.data, v.data + v.size);
    }
  }
  s.optimizer_steps = optimizer_.step_count();
  s.steps = steps_;
  s.rng_seed = options_.seed;
  s.rng_counter = rng_counter_;
  return s;
}

void Trainer::restore(const TrainingState& s) {
  const bool has_moments = !s.exp_avg.empty() || !s.exp_avg_sq.empty();
  if (has_moments) {
    require(s.exp_avg.size() == optimizer_.num_slots() && s.exp_avg_sq.size() == optimizer_.num_slots(),
            "training state: optimizer moments for " + std::to_string(s.exp_avg.size()) + " tensors; the model has " +
                std::to_string(optimizer_.num_slots()));
    for (size_t i = 0; i < optimizer_.num_slots(); ++i) {
      require(s.exp_avg[i].size() == optimizer_.slot_size(i) && s.exp_avg_sq[i].size() == optimizer_.slot_size(i),
              "training state: optimizer moments of tensor " + tensor_name(policy_, i) + " have the wrong size");
    }
  }
  require(s.optimizer_steps >= 0 && s.steps >= s.optimizer_steps,
          "training state: step counters " + std::to_string(s.steps) + " and " + std::to_string(s.optimizer_steps) +
              " are inconsistent");
  policy_.replace_state(s.params, s.recipe, s.scales);  // validates, then replaces
  for (size_t i = 0; i < optimizer_.num_slots(); ++i) {
    const FloatSpan m = optimizer_.exp_avg(i), v = optimizer_.exp_avg_sq(i);
    std::fill(m.data, m.data + m.size, 0.0f);
    std::fill(v.data, v.data + v.size, 0.0f);
    if (has_moments) {
      std::copy(s.exp_avg[i].begin(), s.exp_avg[i].end(), m.data);
      std::copy(s.exp_avg_sq[i].begin(), s.exp_avg_sq[i].end(), v.data);
    }
  }
  optimizer_.set_step_count(s.optimizer_steps);
  steps_ = s.steps;
  options_.seed = s.rng_seed;
  rng_counter_ = s.rng_counter;
  engine_->statistics.clear();
  rebuild_transposed();
}

}  // namespace fp8rl::train
