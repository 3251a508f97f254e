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
  std::vector<float> forward(const rollout::TokenSequences& sequences, const std::vector<int64_t>& prompt_lengths,
                             int64_t begin, int64_t end, float temperature,
                             const policy::ActivationObserver& observer = {});

  // Back-propagates grad_logp (one per completion token of the last
  // forward) into grads (accumulated); entropy receives the entropy of each
  // of those tokens' distributions. Both host arrays. Other passes of the
  // policy's runner may run in between: the backward reads only its tape.
  void backward(const float* grad_logp, const TransposedModel& transposed, ParamArena& grads, float* entropy);

 private:
  LayerGradPointers layer_grads(ParamArena& grads, size_t layer);

  policy::Policy& policy_;
  ForwardTape tape_;
  TokenHead head_;
  LayerBackwardScratch scratch_;
  std::unique_ptr<policy::KvCache> cache_;
  HeadRows rows_;       // of the last forward
  int64_t tokens_ = 0;  // of the last forward
  float temperature_ = 1.0f;
  DeviceArray<float> dresidual_;  // [tokens, hidden]
};

}  // namespace fp8rl::train
