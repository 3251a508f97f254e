#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "core/dist/collectives.h"
#include "core/rollout/rollout.h"
#include "core/rollout/sequence_batch.h"
#include "core/train/grad_clip.h"
#include "core/train/param_arena.h"
#include "core/train/rank_metrics.h"
#include "core/train/training_pass.h"
#include "core/train/trainer_engine.h"
#include "core/train/transposed_model.h"
#include "core/train/weight_gather.h"
#include "kernels/common/adamw_math.h"
#include "kernels/common/counter_rng.h"

namespace fp8rl::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Backend& backend, Clock::time_point start) {
  backend.synchronize();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Recorded experts [fed tokens, sparse layers, k]: each an expert of the
// model, distinct within a (token, layer), as a router chooses them.
void check_recorded_experts(const int32_t* experts, int64_t fed_tokens, const model::ModelConfig& config) {
  const int64_t k = config.moe.num_experts_per_tok, sparse = model::sparse_layer_count(config);
  for (int64_t row = 0; row < fed_tokens * sparse; ++row) {
    const int32_t* choice = experts + row * k;
    for (int64_t j = 0; j < k; ++j) {
      require(choice[j] >= 0 && choice[j] < config.moe.num_experts && std::find(choice, choice + j, choice[j]) == choice + j,
              "train batch: experts[" + std::to_string(row * k + j) + "] = " + std::to_string(choice[j]) +
                  " (fed token " + std::to_string(row / sparse) + ", sparse layer " + std::to_string(row % sparse) +
                  ") is not a distinct expert in [0, " + std::to_string(config.moe.num_experts) + ")");
    }
  }
}

// How many of the training router's choices routed [tokens, k] in sparse
// layer s the generator also made: recorded [fed tokens, sparse, k] from
// the micro-batch's first fed token.
int64_t agreeing_choices(const std::vector<int32_t>& routed, const int32_t* recorded, int64_t s, int64_t sparse,
                         int64_t k) {
  int64_t agreeing = 0;
  const int64_t tokens = static_cast<int64_t>(routed.size()) / k;
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t* theirs = recorded + (t * sparse + s) * k;
    for (int64_t j = 0; j < k; ++j) agreeing += std::find(theirs, theirs + k, routed[static_cast<size_t>(t * k + j)]) != theirs + k;
  }
  return agreeing;
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
  require(options.minibatches >= 1, "trainer: minibatches must be >= 1, got " + std::to_string(options.minibatches));
  require(options.micro_batch_tokens >= 1,
          "trainer: micro_batch_tokens must be >= 1, got " + std::to_string(options.micro_batch_tokens));
  require(options.advantages.group_size >= 1,
          "trainer: advantages.group_size must be >= 1, got " + std::to_string(options.advantages.group_size));
  require(std::isfinite(options.router_aux_loss_coef) && options.router_aux_loss_coef >= 0.0,
          "trainer: router_aux_loss_coef must be finite and >= 0, got " + std::to_string(options.router_aux_loss_coef));
}

// A validated batch with everything the loss reads, per completion token.
struct Trainer::Prepared {
  rollout::TokenSequences sequences;
  std::vector<int64_t> prompt_lengths;
  std::vector<int64_t> offsets;  // [count + 1] completion-token offsets
  std::vector<int64_t> fed;      // [count + 1] fed-token offsets (length - 1 per sequence)
  const int32_t* experts = nullptr;  // [fed tokens, sparse layers, k] or null
  std::vector<int64_t> bounds;   // [minibatches + 1] sequence index of each mini-batch's start
  // [completion tokens] the policy before the iteration; the first
  // mini-batch's part comes from its own training forward when
  // logp_old_from_forward.
  std::vector<float> logp_old;
  bool logp_old_from_forward = true;
  std::vector<float> advantages;
  const float* logp_gen = nullptr;
  const float* logp_ref = nullptr;
  double reward_sum = 0.0;  // 0 when advantages were given
  double recompute_seconds = 0.0;

  int64_t count() const { return sequences.count; }
  int64_t completion_tokens() const { return offsets.back(); }
  int64_t minibatches() const { return static_cast<int64_t>(bounds.size()) - 1; }
};

// Sequences [begin, end) of a prepared batch: one mini-batch.
struct Trainer::Slice {
  int64_t begin = 0, end = 0;
  bool fills_logp_old = false;  // its forward's log-probs are logp_old
};

struct Trainer::Accumulated {
  LossResult loss;
  std::vector<float> logp;     // [slice's completion tokens]
  std::vector<float> entropy;  // [slice's completion tokens]
  int64_t fed_tokens = 0;
  int64_t routing_choices = 0, routing_agreeing = 0;
  double aux_loss_sum = 0.0;  // the micro-batches' load-balancing losses times their fed tokens
  double seconds = 0.0;
};

Trainer::Trainer(policy::Policy& policy, const TrainerOptions& options) : policy_(policy), options_(options) {
  validate_trainer_options(options);
  engine_ = std::make_unique<Engine>(policy);
  policy_.attach_masters(&engine_->arena);
  if (engine_->collectives.distributed()) start_in_step();
}

// Data parallelism starts from rank 0's weights and scales (as PyTorch's
// DistributedDataParallel does); the recipes must already agree.
void Trainer::start_in_step() {
  dist::Collectives& c = engine_->collectives;
  Backend& backend = policy_.context().backend();
  ParamArena& arena = engine_->arena;
  const std::string mine = policy::describe_recipe(policy_.recipe());
  std::vector<int64_t> counts;
  const std::vector<uint8_t> all = c.gather_host_bytes(std::vector<uint8_t>(mine.begin(), mine.end()), &counts);
  const std::vector<int64_t> offsets = dist::part_offsets(counts);
  const std::string first(all.begin(), all.begin() + offsets[1]);
  for (int r = 1; r < c.size(); ++r) {
    const std::string theirs(all.begin() + offsets[static_cast<size_t>(r)], all.begin() + offsets[static_cast<size_t>(r) + 1]);
    if (theirs != first)
      fail(Status::invalid_argument, "trainer: rank " + std::to_string(r) + " trains in recipe \"" + theirs +
                                         "\", rank 0 in \"" + first + "\"; every rank must train in one recipe");
  }
  c.broadcast(arena.masters(), arena.layout().total, dist::ElementType::f32, 0);
  policy::AttentionScales scales = policy_.attention_scales();
  for (std::vector<float>* values : {&scales.q, &scales.k, &scales.v})
    c.broadcast_host(values->data(), static_cast<int64_t>(values->size()), dist::ElementType::f32, 0);
  backend.synchronize();
  policy_.masters_updated();
  policy_.refit();
  policy_.set_attention_scales(scales);
  rebuild_transposed();
  c.reset_traffic();
}

// The policy keeps the trained weights: its host copy takes them back.
Trainer::~Trainer() { policy_.detach_masters(&engine_->arena); }

// Another trainer of the same policy may have taken the masters over since
// this one's last step; then this arena takes them back, values included.
void Trainer::attach() { policy_.attach_masters(&engine_->arena); }

std::vector<float> Trainer::recompute_logprobs(const rollout::TokenSequences& sequences,
                                               const std::vector<int64_t>& prompt_lengths) {
  rollout::SamplingOptions scoring;
  scoring.temperature = options_.temperature;
  scoring.max_tokens_per_step = static_cast<int32_t>(std::min<int64_t>(options_.micro_batch_tokens, 1 << 30));
  return rollout::score_completions(policy_, sequences, prompt_lengths, scoring);
}

Trainer::Prepared Trainer::prepare(const TrainBatch& batch, int64_t minibatches) {
  const model::ModelConfig& config = policy_.config();
  rollout::validate_sequences(batch.sequences, config.vocab_size, config.max_position_embeddings + 1, "sequence");
  require(batch.prompt_lengths != nullptr, "train batch: prompt_lengths is null");
  Prepared p;
  p.sequences = batch.sequences;
  p.offsets.push_back(0);
  p.fed.push_back(0);
  for (int64_t i = 0; i < batch.sequences.count; ++i) {
    const int64_t prompt = batch.prompt_lengths[i], length = batch.sequences.length(i);
    require(prompt >= 1 && prompt <= length, "train batch: prompt length " + std::to_string(prompt) + " of sequence " +
                                                 std::to_string(i) + " must be in [1, " + std::to_string(length) + "]");
    p.prompt_lengths.push_back(prompt);
    p.offsets.push_back(p.offsets.back() + length - prompt);
    p.fed.push_back(p.fed.back() + length - 1);
  }
  require(!options_.routing_replay || model::sparse_layer_count(config) == 0 || batch.experts != nullptr,
          "train batch: routing replay needs the generator's experts (experts is null)");
  p.experts = model::sparse_layer_count(config) > 0 ? batch.experts : nullptr;
  if (p.experts) check_recorded_experts(p.experts, p.fed.back(), config);
  require(p.completion_tokens() >= 1, "train batch: no sequence has a completion token (prompt_lengths[i] equals "
                                      "the length of every sequence i), so there is nothing to train on");
  require(minibatches >= 1 && minibatches <= p.count(), "trainer: minibatches is " + std::to_string(minibatches) +
                                                            " but the batch has " + std::to_string(p.count()) +
                                                            " sequences (each mini-batch needs at least one)");
  for (int64_t k = 0; k <= minibatches; ++k) p.bounds.push_back(k * p.count() / minibatches);
  const LossOptions& loss = options_.loss;
  const bool policy_gradient = loss.kind == LossKind::clipped_policy_gradient;
  require(!(policy_gradient && loss.importance.mode != ImportanceMode::off) || batch.logp_gen != nullptr,
          "train batch: importance weighting needs logp_gen");
  require(!(policy_gradient && loss.kl_coefficient > 0.0) || batch.logp_ref != nullptr,
          "train batch: the KL penalty needs logp_ref");
  p.logp_gen = batch.logp_gen;
  p.logp_ref = batch.logp_ref;
  p.logp_old.resize(static_cast<size_t>(p.completion_tokens()));
  if (batch.logp_old != nullptr) {
    for (int64_t t = 0; t < p.completion_tokens(); ++t) {
      if (!std::isfinite(batch.logp_old[t]))
        fail(Status::non_finite, "train batch: logp_old[" + std::to_string(t) + "] is NaN or Inf");
    }
    std::copy(batch.logp_old, batch.logp_old + p.completion_tokens(), p.logp_old.begin());
    p.logp_old_from_forward = false;
  }
  if (policy_gradient) {
    require((batch.rewards == nullptr) != (batch.advantages == nullptr),
            "train batch: a policy-gradient loss needs exactly one of rewards and advantages");
    std::vector<float> per_sequence(static_cast<size_t>(p.count()));
    if (batch.rewards) {
      group_advantages(batch.rewards, p.count(), options_.advantages, per_sequence.data());
      for (int64_t i = 0; i < p.count(); ++i) p.reward_sum += batch.rewards[i];
    } else {
      per_sequence.assign(batch.advantages, batch.advantages + p.count());
    }
    p.advantages.resize(static_cast<size_t>(p.completion_tokens()));
    broadcast_to_tokens(per_sequence.data(), p.offsets.data(), p.count(), p.advantages.data());
    // What every mini-batch's loss reads from the host, checked before the first update.
    TokenBatch whole;
    whole.offsets = p.offsets.data();
    whole.count = p.count();
    whole.logp_ref = p.logp_ref;
    whole.advantages = p.advantages.data();
    BatchFields fields;
    fields.logp_ref = p.logp_ref != nullptr;
    fields.advantages = true;
    validate_token_batch(whole, fields, "train batch");
  }
  return p;
}

// logp_old of every mini-batch but the first, which takes its own training
// forward's: one scoring pass with the weights before any update.
void Trainer::complete_logp_old(Prepared& p) {
  if (!p.logp_old_from_forward || p.minibatches() == 1) return;
  const Clock::time_point start = Clock::now();
  const int64_t first = p.bounds[1];
  std::vector<int64_t> offsets;
  for (int64_t i = first; i <= p.count(); ++i) offsets.push_back(p.sequences.offsets[i] - p.sequences.offsets[first]);
  rollout::TokenSequences rest{p.sequences.sequence(first), offsets.data(), p.count() - first};
  const std::vector<int64_t> prompts(p.prompt_lengths.begin() + first, p.prompt_lengths.end());
  const std::vector<float> scores = recompute_logprobs(rest, prompts);
  std::copy(scores.begin(), scores.end(), p.logp_old.begin() + p.offsets[static_cast<size_t>(first)]);
  p.recompute_seconds = seconds_since(policy_.context().backend(), start);
}

Trainer::Accumulated Trainer::accumulate(Prepared& p, const Slice& slice) {
  Engine& e = *engine_;
  const Clock::time_point start = Clock::now();
  if (!(e.transposed_recipe == policy_.recipe())) rebuild_transposed();
  e.arena.zero_grads();
  e.statistics.clear();
  const int64_t slice_first = p.offsets[static_cast<size_t>(slice.begin)];
  Accumulated result;
  result.logp.resize(static_cast<size_t>(p.offsets[static_cast<size_t>(slice.end)] - slice_first));
  result.entropy.resize(result.logp.size());

  // The loss is normalized over every rank's mini-batch: the summed
  // gradients are then the gradient of the global batch's loss.
  LossScope scope;
  scope.tokens = static_cast<int64_t>(result.logp.size());
  for (int64_t i = slice.begin; i < slice.end; ++i) scope.sequences += p.offsets[i + 1] > p.offsets[i] ? 1 : 0;
  double fed_scope = static_cast<double>(p.fed[static_cast<size_t>(slice.end)] - p.fed[static_cast<size_t>(slice.begin)]);
  if (e.collectives.distributed()) {
    const std::vector<double> global = e.collectives.sum(
        std::vector<double>{static_cast<double>(scope.tokens), static_cast<double>(scope.sequences), fed_scope});
    scope.tokens = static_cast<int64_t>(global[0]);
    scope.sequences = static_cast<int64_t>(global[1]);
    fed_scope = global[2];
  }
  const model::ModelConfig& config = policy_.config();
  const int64_t sparse = model::sparse_layer_count(config), k = config.moe.num_experts_per_tok;
  std::vector<float> grad_logp;
  for (const rollout::SequenceGroup& group :
       rollout::group_sequences(p.sequences, slice.begin, slice.end, options_.micro_batch_tokens, false)) {
    const int64_t begin = group.begin, end = group.end;
    result.fed_tokens += group.tokens;
    const int64_t first = p.offsets[static_cast<size_t>(begin)];
    const int32_t* recorded = p.experts ? p.experts + p.fed[static_cast<size_t>(begin)] * sparse * k : nullptr;
    const policy::ActivationObserver observer =
        options_.freeze_attention_scales ? policy::ActivationObserver{} : e.statistics.observer();
    std::vector<float> logp = e.pass.forward(p.sequences, p.prompt_lengths, begin, end, options_.temperature, observer,
                                             options_.routing_replay ? recorded : nullptr);
    if (recorded) {
      for (int64_t layer = 0, s = 0; layer < config.num_layers; ++layer) {
        if (!model::is_sparse_layer(config, layer)) continue;
        result.routing_agreeing += agreeing_choices(e.pass.routed(static_cast<size_t>(layer)), recorded, s++, sparse, k);
      }
      result.routing_choices += group.tokens * sparse * k;
    }
    // The load-balancing loss is HF's per micro-batch, weighted by the
    // micro-batch's share of the mini-batch's fed tokens (over every rank).
    const double aux_weight = static_cast<double>(group.tokens) / fed_scope;
    const double aux = sparse > 0 ? e.pass.aux_loss() : 0.0;
    result.aux_loss_sum += aux * static_cast<double>(group.tokens);
    std::copy(logp.begin(), logp.end(), result.logp.begin() + (first - slice_first));
    if (slice.fills_logp_old) std::copy(logp.begin(), logp.end(), p.logp_old.begin() + first);

    std::vector<int64_t> offsets;
    for (int64_t i = begin; i <= end; ++i) offsets.push_back(p.offsets[static_cast<size_t>(i)] - first);
    TokenBatch view;
    view.offsets = offsets.data();
    view.count = end - begin;
    view.logp = logp.data();
    view.logp_old = p.logp_old.data() + first;
    if (p.logp_gen) view.logp_gen = p.logp_gen + first;
    if (p.logp_ref) view.logp_ref = p.logp_ref + first;
    if (!p.advantages.empty()) view.advantages = p.advantages.data() + first;
    grad_logp.resize(logp.size());
    const LossResult part = evaluate_loss(view, options_.loss, grad_logp.data(), &scope);
    result.loss.loss += part.loss + options_.router_aux_loss_coef * aux_weight * aux;
    merge_loss_stats(result.loss.stats, part.stats);
    e.pass.backward(grad_logp.data(), *e.transposed, e.arena, result.entropy.data() + (first - slice_first),
                    static_cast<float>(options_.router_aux_loss_coef * aux_weight));
  }
  result.seconds = seconds_since(policy_.context().backend(), start);
  return result;
}

BatchGradients Trainer::gradients(const TrainBatch& batch) {
  attach();
  Prepared prepared = prepare(batch, 1);
  Accumulated accumulated = accumulate(prepared, Slice{0, prepared.count(), prepared.logp_old_from_forward});
  BatchGradients result;
  result.loss = accumulated.loss;
  result.logp = std::move(accumulated.logp);
  engine_->arena.download(engine_->arena.grads(), result.grads);
  return result;
}

// The first non-finite gradient element, as "<tensor> at index <i>": the
// reason of a skipped step (only then searched for, in each rank's shard of
// the summed gradients; the lowest rank that finds one names it).
std::string Trainer::first_non_finite_gradient() {
  Backend& backend = policy_.context().backend();
  ParamArena& arena = engine_->arena;
  std::string found;
  for (const ArenaTensor& t : arena.layout().tensors) {
    const int64_t begin = std::max(t.offset, arena.shard_begin()), end = std::min(t.offset + t.size, arena.shard_end());
    if (begin >= end) continue;
    const int64_t bad = backend.first_non_finite(arena.grads() + begin, end - begin, 1.0f);
    if (bad >= 0) {
      found = t.name + " at index " + std::to_string(begin - t.offset + bad);
      break;
    }
  }
  dist::Collectives& c = engine_->collectives;
  if (!c.distributed()) return found.empty() ? "the gradient norm" : found;
  std::vector<int64_t> counts;
  const std::vector<uint8_t> all = c.gather_host_bytes(std::vector<uint8_t>(found.begin(), found.end()), &counts);
  const std::vector<int64_t> offsets = dist::part_offsets(counts);
  for (size_t r = 0; r < counts.size(); ++r)
    if (counts[r] > 0) return std::string(all.begin() + offsets[r], all.begin() + offsets[r + 1]);
  return "the gradient norm";  // unreachable: a non-finite norm has a non-finite term
}

// Clipping, AdamW and recalibration on the gradients accumulate() left in the
// arena, all on the backend: only the norm comes back to the host. With N
// ranks: the gradients are reduce-scattered, each rank updates the masters
// and moments of its shard, and recalibration gathers the compute copies
// each rank requantized from its shard (core/train/weight_gather.h).
StepMetrics Trainer::optimizer_step(const Accumulated& a) {
  Backend& backend = policy_.context().backend();
  ParamArena& arena = engine_->arena;
  dist::Collectives& c = engine_->collectives;
  const Clock::time_point start = Clock::now();
  StepMetrics m;
  c.reduce_scatter_sum(arena.grads(), arena.shard_counts());
  const double norm =
      std::sqrt(c.sum(backend.sum_of_squares(arena.grads() + arena.shard_begin(), arena.shard_size())));
  GradClipResult clip;
  if (options_.max_grad_norm > 0.0) {
    clip = clip_for_norm(norm, options_.max_grad_norm);
  } else {
    clip.norm = norm;
    clip.finite = std::isfinite(norm);
  }
  m.learning_rate = learning_rate(options_.schedule, optimizer_steps_);
  if (clip.finite) {
    ++optimizer_steps_;
    const AdamWHyperparameters h{options_.optimizer.beta1, options_.optimizer.beta2, options_.optimizer.eps,
                                 options_.optimizer.weight_decay};
    for (const ArenaTensor& t : arena.layout().tensors) {
      const int64_t begin = std::max(t.offset, arena.shard_begin()), end = std::min(t.offset + t.size, arena.shard_end());
      if (begin >= end) continue;
      const AdamWScalars scalars = adamw_scalars(h, m.learning_rate, optimizer_steps_, clip.scale, t.decay);
      const int64_t moment = begin - arena.shard_begin();
      backend.adamw_update(arena.masters() + begin, arena.grads() + begin, arena.exp_avg() + moment,
                           arena.exp_avg_sq() + moment, end - begin, scalars);
    }
    arena.set_masters_partial(c.distributed());
    policy_.masters_updated();
  }
  m.seconds.train = a.seconds + seconds_since(backend, start);
  ++steps_;

  m.skipped = clip.finite ? 0 : 1;
  if (!clip.finite) {
    m.skip_reason = "non-finite gradient in " + first_non_finite_gradient();
  } else if (options_.recalibrate_after_step) {
    m.seconds.recalibration = recalibrate();
  }
  m.step = steps_;
  m.loss = c.sum(a.loss.loss);  // each rank's part is normalized by the global counts
  m.loss_stats = merge_over_ranks(c, a.loss.stats);
  m.grad_norm = clip.norm;
  m.clipped = clip.clipped ? 1 : 0;
  double entropy = 0.0;
  for (float h : a.entropy) entropy += h;
  const std::vector<double> totals =
      c.sum(std::vector<double>{entropy, static_cast<double>(a.logp.size()), static_cast<double>(a.fed_tokens),
                                static_cast<double>(a.routing_choices), static_cast<double>(a.routing_agreeing),
                                a.aux_loss_sum});
  m.completion_tokens = static_cast<int64_t>(totals[1]);
  m.entropy = m.completion_tokens > 0 ? totals[0] / totals[1] : 0.0;
  m.trained_tokens = static_cast<int64_t>(totals[2]);
  m.routing_choices = static_cast<int64_t>(totals[3]);
  m.routing_agreement = m.routing_choices > 0 ? totals[4] / totals[3] : 0.0;
  m.router_aux_loss = m.trained_tokens > 0 ? totals[5] / totals[2] : 0.0;
  m.communication = {c.traffic().bytes_reduced, c.traffic().bytes_gathered, c.traffic().seconds};
  c.reset_traffic();
  return m;
}

// With N ranks every rank must learn whether any rank's batch was refused
// before the first collective, or the others would wait in it forever.
Trainer::Prepared Trainer::prepare_on_every_rank(const TrainBatch& batch, int64_t minibatches) {
  dist::Collectives& c = engine_->collectives;
  if (!c.distributed()) return prepare(batch, minibatches);
  std::optional<Prepared> prepared;
  c.on_every_rank([&] { prepared.emplace(prepare(batch, minibatches)); });
  return std::move(*prepared);
}

IterationMetrics Trainer::run_iteration(const TrainBatch& batch, int64_t minibatches) {
  attach();
  engine_->collectives.reset_traffic();  // what the iteration moves, not what saves or gathers moved before it
  Prepared p = prepare_on_every_rank(batch, minibatches);
  complete_logp_old(p);
  dist::Collectives& c = engine_->collectives;
  IterationMetrics result;
  for (int64_t k = 0; k < p.minibatches(); ++k) {
    const Slice slice{p.bounds[static_cast<size_t>(k)], p.bounds[static_cast<size_t>(k) + 1],
                      k == 0 && p.logp_old_from_forward};
    StepMetrics m = optimizer_step(accumulate(p, slice));
    m.sequences = c.sum(slice.end - slice.begin);
    finish_timing(m);
    result.minibatches.push_back(std::move(m));
  }
  StepMetrics& total = result.total;
  total = summarize_steps(result.minibatches);
  total.seconds.generation = batch.generation_seconds;
  total.seconds.recompute = p.recompute_seconds;
  const std::vector<double> rewards = c.sum(std::vector<double>{p.reward_sum, static_cast<double>(p.count())});
  total.reward_mean = rewards[0] / rewards[1];
  if (p.logp_gen) {
    TokenBatch whole;
    whole.offsets = p.offsets.data();
    whole.count = p.count();
    whole.logp_old = p.logp_old.data();
    whole.logp_gen = p.logp_gen;
    total.mismatch = merge_over_ranks(c, mismatch_metrics(whole, options_.loss.importance));
    total.has_mismatch = true;
  }
  finish_timing(total);
  return result;
}

IterationMetrics Trainer::iterate(const TrainBatch& batch) { return run_iteration(batch, options_.minibatches); }

StepMetrics Trainer::step(const TrainBatch& batch) { return run_iteration(batch, 1).total; }

void Trainer::rebuild_transposed() {
  engine_->transposed.reset();  // free before allocating the new copies
  engine_->transposed = std::make_unique<TransposedModel>(policy_.context().backend(), policy_.compiled());
  engine_->transposed_recipe = policy_.recipe();
}

double Trainer::recalibrate() {
  attach();
  const Clock::time_point start = Clock::now();
  if (engine_->collectives.distributed()) {
    refit_and_gather_copies(policy_.compiled_for_refit(), policy_.host_tensors(), engine_->arena, engine_->collectives);
  } else {
    policy_.refit();
  }
  engine_->transposed->refit(policy_.compiled());
  if (!engine_->statistics.empty()) {
    engine_->statistics.merge_over_ranks(engine_->collectives);  // one percentile over every rank's tokens
    policy_.set_attention_scales(engine_->statistics.scales(options_.calibration));
  }
  return seconds_since(policy_.context().backend(), start);
}

const ParamArena& Trainer::arena() const { return engine_->arena; }

Trainer::Memory Trainer::memory() const {
  Memory m;
  m.master_weights = engine_->arena.bytes_per_buffer();
  m.gradients = engine_->arena.bytes_per_buffer();
  m.optimizer_state = 2 * engine_->arena.bytes_per_moment();
  m.backward_weights = engine_->transposed->bytes();
  return m;
}

// One stream over all ranks: rank r takes the n_r seeds after those of the
// ranks before it, and every rank's counter moves past all of them, so the
// union of the ranks' rollouts does not depend on the world size.
std::vector<uint64_t> Trainer::next_seeds(int64_t n) {
  require(n >= 0, "next_seeds: n must be >= 0");
  dist::Collectives& c = engine_->collectives;
  const std::vector<double> counts = c.gather_host({static_cast<double>(n)});
  uint64_t first = rng_counter_, total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const auto count = static_cast<uint64_t>(counts[r]);
    if (static_cast<int>(r) < c.rank()) first += count;
    total += count;
  }
  std::vector<uint64_t> seeds(static_cast<size_t>(n));
  for (size_t i = 0; i < seeds.size(); ++i) seeds[i] = counter_random_bits(options_.seed, first + i);
  rng_counter_ += total;
  return seeds;
}

}  // namespace fp8rl::train
