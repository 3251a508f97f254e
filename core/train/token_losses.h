// The RL policy losses over completion tokens, their gradient with respect
// to each token's log-prob, and training statistics. Host code in double; the
// trainer back-propagates grad_logp into the log-softmax.
//
// Per masked token t (LossOptions, loss_options.h, defines the knobs):
//   r   = exp(logp - logp_old)
//   pg  = -min(r A, clip(r, 1 - clip_low, 1 + clip_high) A)          (PPO / GRPO / DAPO)
//   kl  = k1 = logp - logp_ref   or   k3 = exp(x) - x - 1, x = logp_ref - logp
//   l_t = w_t (pg + kl_coefficient kl)                                 (w: importance_weights.h)
// cross_entropy: l_t = -logp. The importance weight multiplies the KL term
// too (as NeMo-RL does): both are expectations over the training policy's
// tokens that the generator's tokens estimate.
//
// Aggregation: token_mean   L = sum_t l_t / N            (N masked tokens)
//              sequence_mean L = (1/S) sum_s (1/n_s) sum_{t in s} l_t
// where S counts only sequences with n_s >= 1 masked tokens. With no masked
// token at all, L = 0 and every gradient is 0.
//
// Gradient: dL/dlogp_t = c_t w_t (dpg + kl_coefficient dkl), c_t the
// aggregation coefficient (1/N or 1/(S n_s)), dpg = -r A when the unclipped
// branch is the minimum (ties included) and 0 when the clipped branch is
// strictly smaller, dk1 = 1, dk3 = 1 - exp(x). Unmasked tokens get 0.
#pragma once

#include <cstdint>

#include "core/train/loss_options.h"

namespace fp8rl::train {

// Token means over the masked tokens, whatever the aggregation.
struct LossStats {
  int64_t tokens = 0;     // masked tokens
  int64_t sequences = 0;  // sequences with >= 1 masked token
  // Fraction of masked tokens where the clipped branch is strictly active,
  // i.e. its gradient is zeroed: (A > 0 and r > 1 + clip_high) or
  // (A < 0 and r < 1 - clip_low). Tokens with A = 0 never count.
  double clip_fraction = 0.0;
  double ratio_mean = 0.0;  // mean r
  double ratio_min = 0.0;   // smallest r (0 without masked tokens)
  double ratio_max = 0.0;   // largest r
  // Mean k3 estimate of KL(old || current) from the tokens, x = logp - logp_old:
  // exp(x) - x - 1, how far the policy taking this step has moved from logp_old's.
  double old_kl_k3_mean = 0.0;
  double is_weight_mean = 0.0;          // mean final importance weight (1 when off)
  double is_truncated_fraction = 0.0;   // ImportanceStats::truncated / tokens
  double is_masked_fraction = 0.0;      // ImportanceStats::masked / tokens
  double is_non_finite_fraction = 0.0;  // ImportanceStats::non_finite / tokens
  int64_t is_masked_sequences = 0;      // sequences zeroed by sequence_masked
  // Mean k1 and k3 of logp against logp_ref (whether or not the penalty is
  // on); 0 when logp_ref is null.
  double kl_k1_mean = 0.0;
  double kl_k3_mean = 0.0;
};

// The denominators of the aggregation when `batch` is one micro-batch of a
// larger batch (split at sequence boundaries): the whole batch's masked
// tokens and sequences with >= 1 masked token. The micro-batches' losses and
// gradients then add up to the whole batch's.
struct LossScope {
  int64_t tokens = 0;
  int64_t sequences = 0;
};

struct LossResult {
  double loss = 0.0;
  LossStats stats;
};

// Evaluates the loss. Reads logp, mask and offsets; clipped_policy_gradient
// also logp_old and advantages, logp_gen when importance weighting is on and
// logp_ref when kl_coefficient > 0 (and for the KL statistics when present).
// grad_logp: [batch.total_tokens()], caller-owned, may be null; receives
// dL/dlogp for every token. Throws invalid_argument for bad options or batch
// shape and non_finite naming the first NaN/inf on a masked token of logp,
// logp_old, logp_ref or advantages (logp_gen: see ImportanceMode).
// scope: null to aggregate over `batch` alone; otherwise its counts must
// cover the batch's (invalid_argument). The statistics stay means over
// `batch`. Deterministic: one fixed summation order, no threads.
LossResult evaluate_loss(const TokenBatch& batch, const LossOptions& options, float* grad_logp,
                         const LossScope* scope = nullptr);

}  // namespace fp8rl::train
