// The backward of the log-probability of a selected token under the full
// softmax at a temperature (sampling_math.h without top-k / top-p), in double:
//   x_i = (double)logit_i / (double)T, m = max_i x_i,
//   Z = sum_i exp(x_i - m) in index order, p_i = exp(x_i - m) / Z
//   log p(target) = x_target - m - log Z
//   dlogit_i = g * ([i == target] - p_i) / T        (written as FP32)
//   entropy  = sum_i p_i * (log Z - (x_i - m)) over p_i > 0, in index order
// where g = dLoss / dlog p(target). -Inf logits have p_i = 0.
#pragma once

#include <math.h>

#include "sampling_math.h"

namespace fp8rl {

FP8RL_HD double log_softmax_prob(double x, double m, double z) { return exp(x - m) / z; }

FP8RL_HD float log_softmax_logit_grad(double p, bool is_target, double g, double temperature) {
  return static_cast<float>(g * ((is_target ? 1.0 : 0.0) - p) / temperature);
}

// One term of the entropy: p (log Z - (x - m)), 0 where p == 0.
FP8RL_HD double log_softmax_entropy_term(double p, double x, double m, double log_z) {
  return p > 0.0 ? p * (log_z - (x - m)) : 0.0;
}

}  // namespace fp8rl
