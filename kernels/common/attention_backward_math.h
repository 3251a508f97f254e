// The backward of causal attention (attention_math.h) for one (query token,
// head), shared by the CPU and CUDA backends (transformer_backward_ops.h).
//
// Straight-through estimation: the roundings of q (q^) and of p (p^) are the
// identity in the backward, but the forward quantities are recomputed from
// the rounded values exactly as attention() computes them. In dequantized
// terms (what the gradients refer to)
//   Q   = q^ * (fp8 math ? q_scale : 1)      the query the scores see
//   K_j = k^_j * (e4m3 cache ? k_scale : 1)  V_j = v^_j * (e4m3 cache ? v_scale : 1)
//   s_j = softmax_scale * Q . K_j            (the forward's bits: attention_score())
//   out = sum_j Pv_j V_j,  Pv_j = p^_j * prob_unit / l,  prob_unit = fp8 ? 1/448 : 1
// and, P_j = e_j / l the normalized (unrounded) probability, e_j = exp_f32(s_j - m):
//   dV_j += Pv_j * dO                                  (exact: out is linear in V)
//   dP_j  = (dO . v^_j) * v_unit                       (lane_dot order; v_unit as V_j's scale)
//   D     = sum_j P_j * dP_j                           (key order, FP32)
//   dS_j  = P_j * (dP_j - D)                           (softmax Jacobian, p^ -> p straight through)
//   dq    = (sum_j dS_j * k^_j) * (softmax_scale * k_unit)   (key order; q^ -> q straight through)
//   dK_j += dS_j * (q^ * (softmax_scale * q_unit))
// Every operation is one IEEE rounding (float_rn.h).
#pragma once

#include "attention_math.h"

namespace fp8rl {

struct AttentionGradScales {
  float dq;    // softmax_scale * k_unit: multiplies each finished sum_j dS_j k^_j
  float dk;    // softmax_scale * q_unit: multiplies q^ before the product with dS_j
  float dp;    // v_unit: multiplies each finished dO . v^_j
  float prob;  // prob_unit: Pv_j = (p^_j * prob) / l
};

FP8RL_HD AttentionGradScales attention_grad_scales(bool kv_e4m3, bool fp8_math, float q_scale, float k_scale,
                                                   float v_scale, float softmax_scale) {
  AttentionGradScales g;
  g.dq = kv_e4m3 ? mul_rn(softmax_scale, k_scale) : softmax_scale;
  g.dk = fp8_math ? mul_rn(softmax_scale, q_scale) : softmax_scale;
  g.dp = kv_e4m3 ? v_scale : 1.0f;
  g.prob = fp8_math ? div_rn(1.0f, kAttentionProbScale) : 1.0f;
  return g;
}

// P_j = e_j / l.
FP8RL_HD float attention_normalized_prob(float e, float prob_sum) { return div_rn(e, prob_sum); }

// Pv_j = (p^_j * prob) / l: the weight of V_j in the forward output.
FP8RL_HD float attention_value_weight(float p_hat, float prob_unit, float prob_sum) {
  return div_rn(mul_rn(p_hat, prob_unit), prob_sum);
}

// dP_j = (dO . v^_j) * v_unit.
FP8RL_HD float attention_prob_grad(const float* dout, const float* v_hat, int64_t head_dim, float dp_scale) {
  return mul_rn(lane_dot(dout, v_hat, head_dim), dp_scale);
}

// D = sum_j P_j * dP_j in key order, from +0, with P_j = e_j / l
// (attention_normalized_prob) from the exponentials e [keys].
FP8RL_HD float attention_prob_grad_dot(const float* e, const float* dp, int64_t keys, float prob_sum) {
  float d = 0.0f;
  for (int64_t j = 0; j < keys; ++j) d = add_rn(d, mul_rn(attention_normalized_prob(e[j], prob_sum), dp[j]));
  return d;
}

// dS_j = P_j * (dP_j - D).
FP8RL_HD float attention_score_grad(float p, float dp, float d) { return mul_rn(p, sub_rn(dp, d)); }

}  // namespace fp8rl
