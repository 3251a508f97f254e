#include "core/train/step_metrics.h"

#include <algorithm>

namespace fp8rl::train {

void merge_loss_stats(LossStats& total, const LossStats& part) {
  const double before = static_cast<double>(total.tokens), added = static_cast<double>(part.tokens);
  const double all = before + added;
  if (all > 0.0) {
    auto mix = [&](double& into, double value) { into = (into * before + value * added) / all; };
    mix(total.clip_fraction, part.clip_fraction);
    mix(total.ratio_mean, part.ratio_mean);
    mix(total.old_kl_k3_mean, part.old_kl_k3_mean);
    mix(total.is_weight_mean, part.is_weight_mean);
    mix(total.is_truncated_fraction, part.is_truncated_fraction);
    mix(total.is_masked_fraction, part.is_masked_fraction);
    mix(total.is_non_finite_fraction, part.is_non_finite_fraction);
    mix(total.kl_k1_mean, part.kl_k1_mean);
    mix(total.kl_k3_mean, part.kl_k3_mean);
  }
  if (part.tokens > 0) {
    total.ratio_min = total.tokens > 0 ? std::min(total.ratio_min, part.ratio_min) : part.ratio_min;
    total.ratio_max = total.tokens > 0 ? std::max(total.ratio_max, part.ratio_max) : part.ratio_max;
  }
  total.tokens += part.tokens;
  total.sequences += part.sequences;
  total.is_masked_sequences += part.is_masked_sequences;
}

void finish_timing(StepMetrics& m) {
  m.tokens_per_second = m.seconds.train > 0.0 ? static_cast<double>(m.trained_tokens) / m.seconds.train : 0.0;
  const double total = m.seconds.total();
  m.recalibration_fraction = total > 0.0 ? m.seconds.recalibration / total : 0.0;
}

StepMetrics summarize_steps(const std::vector<StepMetrics>& steps) {
  if (steps.size() == 1) return steps.front();  // exactly, not a mean of one
  StepMetrics total;
  double entropy = 0.0, agreeing = 0.0, aux = 0.0;
  for (const StepMetrics& m : steps) {
    agreeing += m.routing_agreement * static_cast<double>(m.routing_choices);
    aux += m.router_aux_loss * static_cast<double>(m.trained_tokens);
    total.routing_choices += m.routing_choices;
    if (m.skipped && !total.skipped) total.skip_reason = m.skip_reason;
    total.skipped += m.skipped;
    total.clipped += m.clipped;
    total.loss += m.loss;
    total.grad_norm += m.grad_norm;
    merge_loss_stats(total.loss_stats, m.loss_stats);
    entropy += m.entropy * static_cast<double>(m.completion_tokens);
    total.sequences += m.sequences;
    total.completion_tokens += m.completion_tokens;
    total.trained_tokens += m.trained_tokens;
    total.seconds.train += m.seconds.train;
    total.seconds.recalibration += m.seconds.recalibration;
    total.communication.bytes_reduced += m.communication.bytes_reduced;
    total.communication.bytes_gathered += m.communication.bytes_gathered;
    total.communication.seconds += m.communication.seconds;
  }
  const double n = static_cast<double>(steps.size());
  total.minibatches = static_cast<int64_t>(steps.size());
  total.step = steps.back().step;
  total.learning_rate = steps.back().learning_rate;
  total.loss /= n;
  total.grad_norm /= n;
  total.entropy = total.completion_tokens > 0 ? entropy / static_cast<double>(total.completion_tokens) : 0.0;
  total.routing_agreement = total.routing_choices > 0 ? agreeing / static_cast<double>(total.routing_choices) : 0.0;
  total.router_aux_loss = total.trained_tokens > 0 ? aux / static_cast<double>(total.trained_tokens) : 0.0;
  return total;
}

}  // namespace fp8rl::train
