// The routing arithmetic of a Mixture-of-Experts layer, one token at a time,
// defined once for the CPU and the CUDA backends:
//
//   logits[e]  = sum_h bf16(x[h]) * router[e, h]     FP32, h ascending from +0
//   p[e]       = exp(logits[e] - max) / sum_e' exp(logits[e'] - max)
//   chosen     = the k largest p, best first; equal p: the lower expert index
//   weight[j]  = p[chosen[j]], divided by their sum (j ascending) when normalized
//   out[h]     = sum_j weight[j] * expert_out[j][h]  j ascending from +0
//
// Every value is computed from its own token's inputs in a fixed order, so a
// token is routed and combined the same whatever shares its batch: the
// rollout's and the training forward's routing are one and the same.
#pragma once

#include <cstdint>

#include "bf16_codec.h"
#include "exp_math.h"
#include "float_rn.h"

namespace fp8rl {

// One router logit: x [hidden] (rounded to BF16 here, as every recipe feeds
// its linear layers) against one FP32 router row [hidden].
FP8RL_HD float router_logit(const float* x, const float* router_row, int64_t hidden) {
  float sum = 0.0f;
  for (int64_t h = 0; h < hidden; ++h) sum = add_rn(sum, mul_rn(bf16_round(x[h]), router_row[h]));
  return sum;
}

// The softmax probability of expert e given the row's max and exp-sum.
FP8RL_HD float router_probability(const float* logits, int64_t e, float max, float sum) {
  return div_rn(exp_f32(sub_rn(logits[e], max)), sum);
}

FP8RL_HD bool already_chosen(const int32_t* chosen, int64_t count, int64_t expert) {
  for (int64_t j = 0; j < count; ++j) {
    if (chosen[j] == expert) return true;
  }
  return false;
}

// logits [experts] -> chosen [k] (expert indices, best first) and weights [k].
// A NaN probability never wins a slot (so every slot gets a valid index).
FP8RL_HD void route_token(const float* logits, int64_t experts, int64_t k, bool normalize, int32_t* chosen,
                          float* weights) {
  float max = logits[0];
  for (int64_t e = 1; e < experts; ++e) max = logits[e] > max ? logits[e] : max;
  float sum = 0.0f;
  for (int64_t e = 0; e < experts; ++e) sum = add_rn(sum, exp_f32(sub_rn(logits[e], max)));
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    float best_p = 0.0f;
    for (int64_t e = 0; e < experts; ++e) {
      if (already_chosen(chosen, j, e)) continue;
      const float p = router_probability(logits, e, max, sum);
      if (best < 0 || p > best_p) {  // strictly greater: ties keep the lower index
        best = e;
        best_p = p;
      }
    }
    chosen[j] = static_cast<int32_t>(best);
    weights[j] = best_p;
  }
  if (!normalize) return;
  float total = 0.0f;
  for (int64_t j = 0; j < k; ++j) total = add_rn(total, weights[j]);
  for (int64_t j = 0; j < k; ++j) weights[j] = div_rn(weights[j], total);
}

// out[h] of one token: its k expert outputs, row slot_rows[j] of expert_out
// [*, hidden], weighted and summed in slot order.
FP8RL_HD float combine_value(const float* expert_out, const int64_t* slot_rows, const float* weights, int64_t k,
                             int64_t hidden, int64_t h) {
  float sum = 0.0f;
  for (int64_t j = 0; j < k; ++j) sum = add_rn(sum, mul_rn(weights[j], expert_out[slot_rows[j] * hidden + h]));
  return sum;
}

}  // namespace fp8rl
