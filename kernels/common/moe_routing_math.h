// The routing arithmetic of a Mixture-of-Experts layer, one token at a time,
// defined once for the CPU and the CUDA backends:
//
//   logits[e]  = sum_h bf16(x[h]) * router[e, h]     FP32, h ascending from +0
//   p[e]       = exp(logits[e] - max) / sum_e' exp(logits[e'] - max)
//   chosen     = the k largest p, best first; equal p: the lower expert index
//   weight[j]  = p[chosen[j]], divided by their sum (j ascending) when normalized
//   out[h]     = sum_j weight[j] * expert_out[j][h]  j ascending from +0
//
// and their backward (route_backward_token, router_*_grad, combine_weight_grad).
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

// The softmax's max and exp-sum of one token's router logits [experts].
struct RouterSoftmax {
  float max, sum;
};

FP8RL_HD RouterSoftmax router_softmax(const float* logits, int64_t experts) {
  float max = logits[0];
  for (int64_t e = 1; e < experts; ++e) max = logits[e] > max ? logits[e] : max;
  float sum = 0.0f;
  for (int64_t e = 0; e < experts; ++e) sum = add_rn(sum, exp_f32(sub_rn(logits[e], max)));
  return {max, sum};
}

// weights [k] /= their sum, j ascending.
FP8RL_HD void normalize_gates(float* weights, int64_t k) {
  float total = 0.0f;
  for (int64_t j = 0; j < k; ++j) total = add_rn(total, weights[j]);
  for (int64_t j = 0; j < k; ++j) weights[j] = div_rn(weights[j], total);
}

// logits [experts] -> chosen [k] (expert indices, best first) and weights [k].
// A NaN probability never wins a slot (so every slot gets a valid index).
FP8RL_HD void route_token(const float* logits, int64_t experts, int64_t k, bool normalize, int32_t* chosen,
                          float* weights) {
  const RouterSoftmax softmax = router_softmax(logits, experts);
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    float best_p = 0.0f;
    for (int64_t e = 0; e < experts; ++e) {
      if (already_chosen(chosen, j, e)) continue;
      const float p = router_probability(logits, e, softmax.max, softmax.sum);
      if (best < 0 || p > best_p) {  // strictly greater: ties keep the lower index
        best = e;
        best_p = p;
      }
    }
    chosen[j] = static_cast<int32_t>(best);
    weights[j] = best_p;
  }
  if (normalize) normalize_gates(weights, k);
}

// The gate weights [k] of given experts chosen [k] (routing replay): what
// route_token gives when it chooses them, bit for bit.
FP8RL_HD void replayed_gates(const float* logits, int64_t experts, int64_t k, bool normalize, const int32_t* chosen,
                             float* weights) {
  const RouterSoftmax softmax = router_softmax(logits, experts);
  for (int64_t j = 0; j < k; ++j) weights[j] = router_probability(logits, chosen[j], softmax.max, softmax.sum);
  if (normalize) normalize_gates(weights, k);
}

// The backward of one token's routing: dL/dlogits [experts] from dL/dweights
// [k] of the experts used (chosen [k], their weights [k]) and, when aux_grad
// is not null, dL/dp [experts] of the load-balancing loss. The choice itself
// is piecewise constant and has no gradient. With w_j = p[c_j] / S and
// S = sum_j p[c_j] (normalize): dL/dp[c_i] = (g_i - sum_j g_j w_j) / S;
// else dL/dp[c_i] = g_i. Then the softmax's: dz[e] = p[e] (dp[e] - sum_e' p[e'] dp[e']).
// dlogits doubles as dL/dp's storage.
FP8RL_HD void route_backward_token(const float* logits, int64_t experts, int64_t k, bool normalize,
                                   const int32_t* chosen, const float* weights, const float* dweights,
                                   const float* aux_grad, float* dlogits) {
  const RouterSoftmax softmax = router_softmax(logits, experts);
  for (int64_t e = 0; e < experts; ++e) dlogits[e] = aux_grad ? aux_grad[e] : 0.0f;
  float gates_dot = 0.0f, gates_sum = 0.0f;  // sum_j g_j w_j and S
  if (normalize) {
    for (int64_t j = 0; j < k; ++j) {
      gates_dot = add_rn(gates_dot, mul_rn(dweights[j], weights[j]));
      gates_sum = add_rn(gates_sum, router_probability(logits, chosen[j], softmax.max, softmax.sum));
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    const float dp = normalize ? div_rn(sub_rn(dweights[j], gates_dot), gates_sum) : dweights[j];
    dlogits[chosen[j]] = add_rn(dlogits[chosen[j]], dp);
  }
  float expected = 0.0f;  // sum_e p[e] dp[e]
  for (int64_t e = 0; e < experts; ++e)
    expected = add_rn(expected, mul_rn(router_probability(logits, e, softmax.max, softmax.sum), dlogits[e]));
  for (int64_t e = 0; e < experts; ++e)
    dlogits[e] = mul_rn(router_probability(logits, e, softmax.max, softmax.sum), sub_rn(dlogits[e], expected));
}

// dL/dx[h] of one token through its router logits: sum_e dlogits[e] * router[e, h],
// e ascending (the BF16 rounding of x counts as the identity).
FP8RL_HD float router_input_grad(const float* dlogits, const float* router, int64_t experts, int64_t hidden,
                                 int64_t h) {
  float sum = 0.0f;
  for (int64_t e = 0; e < experts; ++e) sum = add_rn(sum, mul_rn(dlogits[e], router[e * hidden + h]));
  return sum;
}

// dL/drouter[e, h] over a pass: sum_t dlogits[t, e] * bf16(x[t, h]), t ascending.
FP8RL_HD float router_weight_grad(const float* dlogits, const float* x, int64_t tokens, int64_t experts,
                                  int64_t hidden, int64_t e, int64_t h) {
  float sum = 0.0f;
  for (int64_t t = 0; t < tokens; ++t)
    sum = add_rn(sum, mul_rn(dlogits[t * experts + e], bf16_round(x[t * hidden + h])));
  return sum;
}

// out[h] of one token: its k expert outputs, row slot_rows[j] of expert_out
// [*, hidden], weighted and summed in slot order.
FP8RL_HD float combine_value(const float* expert_out, const int64_t* slot_rows, const float* weights, int64_t k,
                             int64_t hidden, int64_t h) {
  float sum = 0.0f;
  for (int64_t j = 0; j < k; ++j) sum = add_rn(sum, mul_rn(weights[j], expert_out[slot_rows[j] * hidden + h]));
  return sum;
}

// dL/dweight of one slot: dout [hidden] . its expert's output row [hidden], h ascending.
FP8RL_HD float combine_weight_grad(const float* dout, const float* expert_row, int64_t hidden) {
  float sum = 0.0f;
  for (int64_t h = 0; h < hidden; ++h) sum = add_rn(sum, mul_rn(dout[h], expert_row[h]));
  return sum;
}

}  // namespace fp8rl
