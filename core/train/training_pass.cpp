#include "core/train/training_pass.h"

#include "core/rollout/sequence_batch.h"
#include "kernels/common/moe_routing_math.h"

namespace fp8rl::train {

TrainingPass::TrainingPass(policy::Policy& policy)
    : policy_(policy),
      tape_(policy.context().backend(), policy.config()),
      head_(policy.context().backend(), policy.config()) {}

TrainingPass::~TrainingPass() = default;

std::vector<float> TrainingPass::forward(const rollout::TokenSequences& sequences,
                                         const std::vector<int64_t>& prompt_lengths, int64_t begin, int64_t end,
                                         float temperature, const policy::ActivationObserver& observer,
                                         const int32_t* replay) {
  // Every token but each sequence's last is fed, token t in cache row t
  // (which layer_backward relies on). The completion rows' logits come from
  // the tape through the token head, not from the runner's head.
  policy::TokenBatch batch =
      rollout::sequence_batch(sequences, begin, end, false, rollout::LogitRows::completions, prompt_lengths);
  rows_ = HeadRows{};
  for (size_t t = 0; t < batch.size(); ++t) {
    if (batch.wants_logits[t]) rows_.rows.push_back(static_cast<int32_t>(t));
  }
  rows_.targets = std::move(batch.row_targets);
  batch.row_targets.clear();
  batch.wants_logits.assign(batch.size(), 0);
  tokens_ = static_cast<int64_t>(batch.size());
  temperature_ = temperature;
  std::vector<float> logp(rows_.size());
  if (tokens_ == 0) return logp;

  Backend& backend = policy_.context().backend();
  const model::ModelConfig& config = policy_.config();
  if (!cache_ || cache_->rows() < tokens_) {
    cache_.reset();  // free before allocating the larger one
    cache_ = std::make_unique<policy::KvCache>(backend, policy_.compiled(), model::kv_dim(config), tokens_);
  }
  set_replay(replay);
  policy::PassLimits limits;
  limits.max_tokens = tokens_;
  policy_.runner().run(
      policy_.compiled(), policy_.attention_scales(), batch, *cache_, limits, [](int64_t, int64_t, const float*) {},
      observer, &tape_);
  set_replay(nullptr);
  head_.logprobs(policy_.compiled(), tape_.final_residual(), rows_, temperature, logp.data());
  return logp;
}

// Points each sparse layer's state at its slice of replay [tokens, sparse layers, k], or at none.
void TrainingPass::set_replay(const int32_t* replay) {
  const model::ModelConfig& config = policy_.config();
  const size_t sparse = static_cast<size_t>(model::sparse_layer_count(config));
  const size_t k = static_cast<size_t>(config.moe.num_experts_per_tok), n = static_cast<size_t>(tokens_);
  replay_.resize(sparse);
  size_t s = 0;
  for (size_t layer = 0; layer < static_cast<size_t>(config.num_layers); ++layer) {
    blocks::MoeState* state = tape_.moe(layer);
    if (!state) continue;
    state->replay = nullptr;
    if (!replay) continue;
    std::vector<int32_t>& mine = replay_[s];  // [tokens, k]
    mine.resize(n * k);
    for (size_t t = 0; t < n; ++t) {
      for (size_t j = 0; j < k; ++j) mine[t * k + j] = replay[(t * sparse + s) * k + j];
    }
    state->replay = mine.data();
    ++s;
  }
}

const std::vector<int32_t>& TrainingPass::routed(size_t layer) {
  const blocks::MoeState* state = tape_.moe(layer);
  require(state != nullptr, "TrainingPass::routed: layer " + std::to_string(layer) + " is not sparse");
  return state->chosen_host;
}

std::vector<double> TrainingPass::expert_choice_counts() {
  std::vector<double> counts(static_cast<size_t>(policy_.config().moe.num_experts), 0.0);
  for (size_t layer = 0; layer < static_cast<size_t>(policy_.config().num_layers); ++layer) {
    if (const blocks::MoeState* state = tape_.moe(layer)) {
      for (const int32_t e : state->used_host) counts[static_cast<size_t>(e)] += 1.0;
    }
  }
  return counts;
}

double TrainingPass::aux_loss() {
  const model::ModelConfig& config = policy_.config();
  const int64_t experts = config.moe.num_experts;
  const double n = static_cast<double>(model::sparse_layer_count(config) * tokens_);
  if (n == 0) return 0.0;
  std::vector<double> probability(static_cast<size_t>(experts), 0.0);  // sum of p[e] over the N tokens
  std::vector<float> logits;
  for (size_t layer = 0; layer < static_cast<size_t>(config.num_layers); ++layer) {
    const blocks::MoeState* state = tape_.moe(layer);
    if (!state) continue;
    logits.resize(static_cast<size_t>(tokens_ * experts));
    state->logits.download(logits.data(), logits.size());
    for (int64_t t = 0; t < tokens_; ++t) {
      const float* row = logits.data() + t * experts;
      const RouterSoftmax softmax = router_softmax(row, experts);
      for (int64_t e = 0; e < experts; ++e)
        probability[static_cast<size_t>(e)] += router_probability(row, e, softmax.max, softmax.sum);
    }
  }
  const std::vector<double> counts = expert_choice_counts();
  double sum = 0.0;
  for (size_t e = 0; e < counts.size(); ++e) sum += (counts[e] / n) * (probability[e] / n);
  return static_cast<double>(experts) * sum;
}

const float* TrainingPass::upload_aux_grad(float aux_coef) {
  const model::ModelConfig& config = policy_.config();
  const double n = static_cast<double>(model::sparse_layer_count(config) * tokens_);
  if (aux_coef == 0.0f || n == 0) return nullptr;
  const std::vector<double> counts = expert_choice_counts();
  std::vector<float> grad(counts.size());
  for (size_t e = 0; e < counts.size(); ++e)
    grad[e] = static_cast<float>(aux_coef * static_cast<double>(config.moe.num_experts) * counts[e] / (n * n));
  aux_grad_.reserve_discarding(policy_.context().backend(), grad.size());
  aux_grad_.upload(grad.data(), grad.size());
  return aux_grad_.data();
}

LayerGradPointers TrainingPass::layer_grads(ParamArena& grads, size_t layer) {
  const model::LayerParams& p = policy_.host_tensors().layers[layer];
  const model::HostTensor none;
  LayerGradPointers g;
  for (const model::NormPart& part : model::kNormParts) g.norms[model::index(part.role)] = grads.grad(p.*part.weight);
  for (const model::LinearPart& part : model::kLinearParts) {
    g.linears[model::index(part.role)] = {grads.grad(p.*part.weight), grads.grad(part.bias ? p.*part.bias : none)};
  }
  for (const model::ExpertParams& expert : p.experts) {
    ExpertGradPointers& e = g.experts.emplace_back();
    for (const model::ExpertPart& part : model::kExpertParts) e.linears[model::index(part.role)].weight = grads.grad(expert.*part.weight);
  }
  return g;
}

void TrainingPass::backward(const float* grad_logp, const TransposedModel& transposed, ParamArena& grads,
                            float* entropy, float aux_coef) {
  if (tokens_ == 0) return;
  Backend& backend = policy_.context().backend();
  const model::ModelConfig& config = policy_.config();
  const model::ModelParams& params = policy_.host_tensors();  // names the gradients' tensors
  const size_t residual = static_cast<size_t>(tokens_ * config.hidden_size);
  dresidual_.reserve_discarding(backend, residual);
  backend.zero_fill(dresidual_.data(), residual * sizeof(float));

  HeadGrads head;
  head.final_norm = grads.grad(params.final_norm);
  head.head = grads.grad(params.lm_head.empty() ? params.embed_tokens : params.lm_head);
  head_.backward(policy_.compiled(), transposed.head(), tape_.final_residual(), tokens_, rows_, temperature_, grad_logp,
                 dresidual_.data(), head, entropy);
  const policy::CompiledModel& model = policy_.compiled();
  const float* aux_grad = upload_aux_grad(aux_coef);
  for (size_t layer = model.layers().size(); layer-- > 0;) {
    layer_backward(backend, config, model, layer, transposed.layers()[layer], policy_.attention_scales(), *cache_,
                   policy_.runner().rope(), tape_, layer_grads(grads, layer), aux_grad, dresidual_.data(), scratch_);
  }
  backend.embedding_backward(dresidual_.data(), tape_.indices().ids, tokens_, config.vocab_size, config.hidden_size,
                             grads.grad(params.embed_tokens));
}

}  // namespace fp8rl::train
