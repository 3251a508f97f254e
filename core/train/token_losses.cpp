#include "core/train/token_losses.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/train/importance_weights.h"
#include "kernels/error.h"

namespace fp8rl::train {

namespace {

struct TokenTerm {
  double loss = 0.0;
  double grad = 0.0;  // d loss / d logp
};

}  // namespace

LossResult evaluate_loss(const TokenBatch& batch, const LossOptions& options, float* grad_logp,
                         const LossScope* scope) {
  validate_loss_options(options);
  const bool policy_gradient = options.kind == LossKind::clipped_policy_gradient;
  const bool penalty = policy_gradient && options.kl_coefficient > 0.0;
  BatchFields fields;
  fields.logp = true;
  fields.logp_old = policy_gradient;
  fields.logp_gen = policy_gradient && options.importance.mode != ImportanceMode::off;
  fields.logp_ref = penalty || (policy_gradient && batch.logp_ref != nullptr);
  fields.advantages = policy_gradient;
  validate_token_batch(batch, fields, "loss");
  if (penalty) require(batch.logp_ref != nullptr, "loss: kl_coefficient > 0 needs logp_ref");

  const int64_t total = batch.total_tokens();
  std::vector<double> weights;
  ImportanceStats importance;
  if (policy_gradient) {
    weights.resize(static_cast<size_t>(total));
    importance = importance_weights(batch, options.importance, weights.data());
  }
  const bool with_reference = policy_gradient && batch.logp_ref != nullptr;

  // Masked tokens per sequence, for the aggregation coefficients.
  int64_t tokens = 0, sequences = 0;
  for (int64_t s = 0; s < batch.count; ++s) {
    int64_t n = 0;
    for (int64_t t = batch.offsets[s]; t < batch.offsets[s + 1]; ++t) n += batch.counts(t) ? 1 : 0;
    tokens += n;
    sequences += n > 0 ? 1 : 0;
  }

  int64_t scope_tokens = tokens, scope_sequences = sequences;
  if (scope != nullptr) {
    require(scope->tokens >= tokens && scope->sequences >= sequences,
            "loss: the scope's " + std::to_string(scope->tokens) + " tokens and " + std::to_string(scope->sequences) +
                " sequences do not cover the batch's " + std::to_string(tokens) + " and " + std::to_string(sequences));
    scope_tokens = scope->tokens;
    scope_sequences = scope->sequences;
  }

  LossResult result;
  result.stats.tokens = tokens;
  result.stats.sequences = sequences;
  double ratio_sum = 0.0, old_kl_sum = 0.0, k1_sum = 0.0, k3_sum = 0.0;
  double ratio_min = HUGE_VAL, ratio_max = -HUGE_VAL;
  int64_t clipped = 0;
  const double low = 1.0 - options.clip_low, high = 1.0 + options.clip_high;
  for (int64_t s = 0; s < batch.count; ++s) {
    const int64_t begin = batch.offsets[s], end = batch.offsets[s + 1];
    int64_t n = 0;
    for (int64_t t = begin; t < end; ++t) n += batch.counts(t) ? 1 : 0;
    const double coefficient = options.aggregation == Aggregation::token_mean
                                   ? 1.0 / static_cast<double>(std::max<int64_t>(scope_tokens, 1))
                                   : 1.0 / (static_cast<double>(std::max<int64_t>(scope_sequences, 1)) *
                                            static_cast<double>(std::max<int64_t>(n, 1)));
    for (int64_t t = begin; t < end; ++t) {
      if (!batch.counts(t)) {
        if (grad_logp != nullptr) grad_logp[t] = 0.0f;
        continue;
      }
      const double logp = batch.logp[t];
      TokenTerm term;
      if (!policy_gradient) {
        term.loss = -logp;
        term.grad = -1.0;
      } else {
        const double log_ratio = logp - static_cast<double>(batch.logp_old[t]);
        const double ratio = std::exp(log_ratio);
        const double advantage = batch.advantages[t];
        const double unclipped = ratio * advantage;
        const double clipped_objective = std::clamp(ratio, low, high) * advantage;
        ratio_sum += ratio;
        old_kl_sum += std::expm1(log_ratio) - log_ratio;
        ratio_min = std::min(ratio_min, ratio);
        ratio_max = std::max(ratio_max, ratio);
        if (unclipped <= clipped_objective) {
          term.loss = -unclipped;
          term.grad = -unclipped;  // d(r A)/dlogp = r A
        } else {
          term.loss = -clipped_objective;  // constant in logp: gradient 0
        }
        if ((advantage > 0.0 && ratio > high) || (advantage < 0.0 && ratio < low)) ++clipped;
        if (with_reference) {
          const double x = static_cast<double>(batch.logp_ref[t]) - logp;
          const double k1 = -x, k3 = std::expm1(x) - x;
          k1_sum += k1;
          k3_sum += k3;
          if (penalty) {
            const bool use_k1 = options.kl_estimator == KlEstimator::k1;
            term.loss += options.kl_coefficient * (use_k1 ? k1 : k3);
            term.grad += options.kl_coefficient * (use_k1 ? 1.0 : -std::expm1(x));
          }
        }
        const double w = weights[static_cast<size_t>(t)];
        term.loss *= w;
        term.grad *= w;
      }
      result.loss += coefficient * term.loss;
      if (grad_logp != nullptr) grad_logp[t] = static_cast<float>(coefficient * term.grad);
    }
  }

  if (policy_gradient && tokens > 0) {
    const double n = static_cast<double>(tokens);
    result.stats.clip_fraction = static_cast<double>(clipped) / n;
    result.stats.ratio_mean = ratio_sum / n;
    result.stats.ratio_min = ratio_min;
    result.stats.ratio_max = ratio_max;
    result.stats.old_kl_k3_mean = old_kl_sum / n;
    result.stats.is_weight_mean = importance.mean_weight();
    result.stats.is_truncated_fraction = importance.fraction(importance.truncated);
    result.stats.is_masked_fraction = importance.fraction(importance.masked);
    result.stats.is_non_finite_fraction = importance.fraction(importance.non_finite);
    result.stats.is_masked_sequences = importance.masked_sequences;
    if (with_reference) {
      result.stats.kl_k1_mean = k1_sum / n;
      result.stats.kl_k3_mean = k3_sum / n;
    }
  }
  return result;
}

}  // namespace fp8rl::train
