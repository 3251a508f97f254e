#include "core/train/training_pass.h"

#include "core/rollout/sequence_batch.h"

namespace fp8rl::train {

TrainingPass::TrainingPass(policy::Policy& policy)
    : policy_(policy),
      tape_(policy.context().backend(), policy.config()),
      head_(policy.context().backend(), policy.config()) {}

TrainingPass::~TrainingPass() = default;

std::vector<float> TrainingPass::forward(const rollout::TokenSequences& sequences,
                                         const std::vector<int64_t>& prompt_lengths, int64_t begin, int64_t end,
                                         float temperature, const policy::ActivationObserver& observer) {
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
  policy::PassLimits limits;
  limits.max_tokens = tokens_;
  policy_.runner().run(
      policy_.compiled(), policy_.attention_scales(), batch, *cache_, limits, [](int64_t, int64_t, const float*) {},
      observer, &tape_);
  head_.logprobs(policy_.compiled(), tape_.final_residual(), rows_, temperature, logp.data());
  return logp;
}

LayerGradPointers TrainingPass::layer_grads(ParamArena& grads, size_t layer) {
  const model::LayerParams& p = policy_.host_tensors().layers[layer];
  const model::HostTensor none;
  LayerGradPointers g;
  for (const model::NormPart& part : model::kNormParts) g.norms[model::index(part.role)] = grads.grad(p.*part.weight);
  for (const model::LinearPart& part : model::kLinearParts) {
    g.linears[model::index(part.role)] = {grads.grad(p.*part.weight), grads.grad(part.bias ? p.*part.bias : none)};
  }
  return g;
}

void TrainingPass::backward(const float* grad_logp, const TransposedModel& transposed, ParamArena& grads,
                            float* entropy) {
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
  for (size_t layer = model.layers().size(); layer-- > 0;) {
    layer_backward(backend, config, model, layer, transposed.layers()[layer], policy_.attention_scales(), *cache_,
                   policy_.runner().rope(), tape_, layer_grads(grads, layer), dresidual_.data(), scratch_);
  }
  backend.embedding_backward(dresidual_.data(), tape_.indices().ids, tokens_, config.vocab_size, config.hidden_size,
                             grads.grad(params.embed_tokens));
}

}  // namespace fp8rl::train
