// How far the generator's log-probs are from the training policy's on the
// same tokens (FP8 rollout vs. the trainer's recomputation), over the masked
// tokens, with NeMo-RL's definitions (docs/guides/grpo.md#metrics there):
//
//   token_mult_prob_error = mean exp(|logp_train - logp_gen|)       (>= 1; 1 = identical)
//   gen_kl_error          = mean k3 of KL(gen || train):
//                           exp(x) - x - 1, x = logp_train - logp_gen  (NeMo-RL's default k3)
//   gen_kl_k1             = mean (logp_gen - logp_train)            (the k1 estimate of the same KL)
//   policy_kl_error       = mean k3 of KL(train || gen): exp(-x) + x - 1
//
// The tokens were drawn by the generator, so k1 and k3 of KL(gen || train)
// are both unbiased; k3 is never negative, which makes it the better
// per-batch diagnostic. Identical log-probs give exactly 1 and 0.
#pragma once

#include <cstdint>

#include "core/train/loss_options.h"

namespace fp8rl::train {

struct MismatchMetrics {
  int64_t tokens = 0;  // masked tokens
  // Means over the masked tokens whose logp_gen is finite; the others are
  // counted in non_finite_tokens (one bad token would make every mean inf).
  double token_mult_prob_error = 0.0;
  double gen_kl_error = 0.0;
  double gen_kl_k1 = 0.0;
  double policy_kl_error = 0.0;
  int64_t non_finite_tokens = 0;
  // The importance weights of `importance` (importance_weights.h), over all
  // masked tokens.
  double is_weight_mean = 0.0;
  double is_truncated_fraction = 0.0;
  double is_masked_fraction = 0.0;
  int64_t is_masked_sequences = 0;
};

// Reads offsets, mask, logp_old (the training policy's recomputed log-probs)
// and logp_gen; the other arrays of `batch` are ignored. Throws
// invalid_argument for a malformed batch or options and non_finite naming the
// first NaN/inf logp_old on a masked token.
MismatchMetrics mismatch_metrics(const TokenBatch& batch, const ImportanceOptions& importance);

}  // namespace fp8rl::train
