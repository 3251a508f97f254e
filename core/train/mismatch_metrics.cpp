#include "core/train/mismatch_metrics.h"

#include <cmath>

#include "core/train/importance_weights.h"

namespace fp8rl::train {

MismatchMetrics mismatch_metrics(const TokenBatch& batch, const ImportanceOptions& importance) {
  validate_importance_options(importance);
  BatchFields fields;
  fields.logp_old = true;
  fields.logp_gen = true;
  validate_token_batch(batch, fields, "mismatch metrics");

  MismatchMetrics metrics;
  double mult_sum = 0.0, k3_sum = 0.0, k1_sum = 0.0, policy_k3_sum = 0.0;
  int64_t finite = 0;
  for (int64_t t = 0; t < batch.total_tokens(); ++t) {
    if (!batch.counts(t)) continue;
    ++metrics.tokens;
    if (!std::isfinite(batch.logp_gen[t])) {
      ++metrics.non_finite_tokens;
      continue;
    }
    ++finite;
    const double x = static_cast<double>(batch.logp_old[t]) - static_cast<double>(batch.logp_gen[t]);
    mult_sum += std::exp(std::fabs(x));
    k3_sum += std::expm1(x) - x;
    k1_sum += -x;
    policy_k3_sum += std::expm1(-x) + x;
  }
  if (finite > 0) {
    const double n = static_cast<double>(finite);
    metrics.token_mult_prob_error = mult_sum / n;
    metrics.gen_kl_error = k3_sum / n;
    metrics.gen_kl_k1 = k1_sum / n;
    metrics.policy_kl_error = policy_k3_sum / n;
  }

  const ImportanceStats stats = importance_weights(batch, importance, nullptr);
  metrics.is_weight_mean = stats.mean_weight();
  metrics.is_truncated_fraction = stats.fraction(stats.truncated);
  metrics.is_masked_fraction = stats.fraction(stats.masked);
  metrics.is_masked_sequences = stats.masked_sequences;
  return metrics;
}

}  // namespace fp8rl::train
