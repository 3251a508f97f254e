// One micro-batch of a training step on a policy: a recorded forward pass
// over whole sequences (ModelRunner with a ForwardTape, so the log-probs are
// the rollout's, bit for bit), then, given dL/dlogp of its completion tokens,
// the backward pass through the head, every layer and the embeddings into a
// ParamArena's gradients.
//
// Usage:
//   TrainingPass pass(policy);
//   std::vector<float> logp = pass.forward(sequences, prompt_lengths, begin, end, temperature, observer);
//   ... loss -> grad_logp ...
//   pass.backward(grad_logp.data(), transposed, grads, entropy.data());
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/policy/kv_cache.h"
#include "core/policy/model_runner.h"
#include "core/policy/policy.h"
#include "core/rollout/token_sequences.h"
#include "core/train/forward_tape.h"
#include "core/train/layer_backward.h"
#include "core/train/param_arena.h"
#include "core/train/token_head.h"
#include "core/train/transposed_model.h"

namespace fp8rl::train {

class TrainingPass {
 public:
  explicit TrainingPass(policy::Policy& policy);
  ~TrainingPass();

  // Runs sequences [begin, end) (all but each one's last token) and returns,
  // for each completion token (position >= prompt_lengths[i]) in order, its
  // log-prob under softmax(logits / temperature). Sequences are assumed
  // validated; the observer sees each layer's post-RoPE Q, K and V.
  // replay (routing replay; host, or null): the experts each fed token uses
  // in each sparse layer, [fed tokens, sparse layers, k] in the order fed
  // (sequence after sequence, positions ascending), instead of the router's.
  std::vector<float> forward(const rollout::TokenSequences& sequences, const std::vector<int64_t>& prompt_lengths,
                             int64_t begin, int64_t end, float temperature,
                             const policy::ActivationObserver& observer = {}, const int32_t* replay = nullptr);

  // The router's own choice [fed tokens, k] in sparse layer `layer` (a layer
  // index) in the last forward, replayed or not.
  const std::vector<int32_t>& routed(size_t layer);
  int64_t fed_tokens() const { return tokens_; }

  // Back-propagates grad_logp (one per completion token of the last
  // forward) into grads (accumulated); entropy receives the entropy of each
  // of those tokens' distributions. Both host arrays. Other passes of the
  // policy's runner may run in between: the backward reads only its tape.
  // aux_coef: the weight of the last forward's load-balancing loss
  // (aux_loss()) in the loss; 0 leaves it out.
  void backward(const float* grad_logp, const TransposedModel& transposed, ParamArena& grads, float* entropy,
                float aux_coef = 0.0f);

  // The load-balancing loss of the last forward (Hugging Face's
  // load_balancing_loss_func of Qwen3-MoE over its fed tokens and sparse
  // layers): with N = sparse layers * fed tokens, P[e] the mean router
  // probability of expert e over them and c[e] how many of their N * k
  // choices are e, aux = experts * sum_e (c[e] / N) P[e] (k when perfectly
  // balanced); 0 without sparse layers. Its gradient treats c as a
  // constant: dL/dp[e] = aux_coef * experts * c[e] / N^2 for every token.
  double aux_loss();

 private:
  LayerGradPointers layer_grads(ParamArena& grads, size_t layer);
  void set_replay(const int32_t* replay);
  // c[e] of aux_loss(): each expert's count of choices over the sparse layers.
  std::vector<double> expert_choice_counts();
  const float* upload_aux_grad(float aux_coef);

  policy::Policy& policy_;
  ForwardTape tape_;
  TokenHead head_;
  LayerBackwardScratch scratch_;
  std::unique_ptr<policy::KvCache> cache_;
  HeadRows rows_;       // of the last forward
  int64_t tokens_ = 0;  // of the last forward
  float temperature_ = 1.0f;
  DeviceArray<float> dresidual_;  // [tokens, hidden]
  DeviceArray<float> aux_grad_;   // [experts]
  std::vector<std::vector<int32_t>> replay_;  // per sparse layer [fed tokens, k]
};

}  // namespace fp8rl::train
