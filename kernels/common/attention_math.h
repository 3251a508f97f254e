// The arithmetic of causal attention for one (query token, head), shared by
// the CPU and CUDA backends (transformer_ops.h AttentionArgs):
//
//   q^      = bf16_round(q)                          (BF16 math)
//           = decode(e4m3_saturating(q / q_scale))   (FP8 math)
//   k^, v^  = the cached values as stored: BF16 decoded, or the E4M3 code
//             decoded without its scale
//   s_j     = lane_dot(q^, k^_j) * score_scale       (one rounding per step)
//   m       = max_j s_j
//   p_j     = exp_f32(s_j - m)
//   l       = p_0 + p_1 + ... in key order (FP32)
//   p^_j    = bf16_round(p_j)                        (BF16 math)
//           = decode(e4m3_saturating(p_j * 448))     (FP8 math)
//   o_d     = p^_0 v^_0d + p^_1 v^_1d + ... in key order (FP32, no FMA)
//   out_d   = (o_d * out_scale) / l
//
// with score_scale and out_scale from attention_scales(). The scales are
// applied once, to finished sums, as a fused FP8 kernel applies them. Every
// output is a function of its own token's query and keys only, so prefill,
// decode and full-sequence passes give the same bits.
#pragma once

#include "bf16_codec.h"
#include "block_scale.h"
#include "exp_math.h"
#include "lane_dot.h"

namespace fp8rl {

// The fixed scale of P in FP8 math: p <= 1 maps onto [0, 448].
constexpr float kAttentionProbScale = 448.0f;

struct AttentionScales {
  float score;  // multiplies each finished q^.k^ dot
  float out;    // multiplies each finished p^.v^ sum (before the division by l)
};

// kv_e4m3: the cache holds E4M3 codes; fp8_math: AttentionMath::fp8 (needs kv_e4m3).
FP8RL_HD AttentionScales attention_scales(bool kv_e4m3, bool fp8_math, float q_scale, float k_scale, float v_scale,
                                          float softmax_scale) {
  AttentionScales scales;
  if (fp8_math)
    scales.score = mul_rn(mul_rn(q_scale, k_scale), softmax_scale);
  else
    scales.score = kv_e4m3 ? mul_rn(softmax_scale, k_scale) : softmax_scale;
  const float v = kv_e4m3 ? v_scale : 1.0f;
  scales.out = fp8_math ? mul_rn(v, div_rn(1.0f, kAttentionProbScale)) : v;
  return scales;
}

FP8RL_HD float attention_query_value(float q, bool fp8_math, float q_scale) {
  if (fp8_math) return fp8_decode(quantize_value(q, q_scale, Fp8Format::e4m3, /*saturate=*/true), Fp8Format::e4m3);
  return bf16_round(q);
}

FP8RL_HD float attention_prob_value(float p, bool fp8_math) {
  if (fp8_math)
    return fp8_decode(fp8_encode(mul_rn(p, kAttentionProbScale), Fp8Format::e4m3, /*saturate=*/true), Fp8Format::e4m3);
  return bf16_round(p);
}

// One cached K or V element as the products see it.
FP8RL_HD float attention_cached_bf16(uint16_t code) { return bf16_decode(code); }
FP8RL_HD float attention_cached_e4m3(uint8_t code) { return fp8_decode(code, Fp8Format::e4m3); }

FP8RL_HD float attention_score(const float* q_hat, const float* k_hat, int64_t head_dim, float score_scale) {
  return mul_rn(lane_dot(q_hat, k_hat, head_dim), score_scale);
}

// m = max_j s_j as a fold in key order from s_0 (a NaN s_0 sticks, later NaNs
// are skipped, the first of equal values is kept): one thread, in order.
FP8RL_HD float attention_max_score(const float* scores, int64_t keys) {
  float m = scores[0];
  for (int64_t j = 1; j < keys; ++j) m = scores[j] > m ? scores[j] : m;
  return m;
}

// l = p_0 + p_1 + ... in key order, from +0 (the order is the contract).
FP8RL_HD float attention_prob_sum(const float* p, int64_t keys) {
  float l = 0.0f;
  for (int64_t j = 0; j < keys; ++j) l = add_rn(l, p[j]);
  return l;
}

FP8RL_HD float attention_output(float weighted_sum, float out_scale, float prob_sum) {
  return div_rn(mul_rn(weighted_sum, out_scale), prob_sum);
}

}  // namespace fp8rl
