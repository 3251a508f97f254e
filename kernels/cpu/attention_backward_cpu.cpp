#include "attention_backward_cpu.h"

#include "../common/attention_backward_math.h"
#include "../transformer_backward_checks.h"
#include "isa_dispatch.h"

namespace fp8rl::cpu {
namespace {

// One cached K or V row of one kv head, as the products see it: out [n].
inline void decode_cached(const void* cache, bool e4m3, int64_t offset, int64_t n, float* out) {
  if (e4m3) {
    const uint8_t* codes = static_cast<const uint8_t*>(cache) + offset;
    for (int64_t d = 0; d < n; ++d) out[d] = attention_cached_e4m3(codes[d]);
  } else {
    const uint16_t* codes = static_cast<const uint16_t*>(cache) + offset;
    for (int64_t d = 0; d < n; ++d) out[d] = attention_cached_bf16(codes[d]);
  }
}

// Scratch floats of one (token, head): q_hat, qk, acc, row [head_dim each];
// e, p_hat, dp [max_keys each].
int64_t scratch_floats(int64_t head_dim, int64_t max_keys) { return 4 * head_dim + 3 * max_keys; }

// One query head of one token: writes dq, adds into dk and dv.
FP8RL_ISA_BODY void attention_backward_head(const AttentionBackwardArgs& args, const AttentionScales& fwd,
                                            const AttentionGradScales& grad, int64_t token, int64_t head,
                                            float* scratch) {
  const AttentionArgs& a = args.forward;
  const bool e4m3 = a.kv_format == KvFormat::e4m3, fp8_math = a.math == AttentionMath::fp8;
  const int64_t hd = a.head_dim, max_keys = a.max_key_count;
  float* q_hat = scratch;
  float* qk = q_hat + hd;
  float* acc = qk + hd;
  float* row = acc + hd;
  float* e = row + hd;
  float* p_hat = e + max_keys;
  float* dp = p_hat + max_keys;

  const int64_t kv_head = head / (a.heads / a.kv_heads);
  const int64_t stride = a.kv_heads * hd;
  const float* q = a.q + (token * a.heads + head) * hd;
  const float* dout = args.dout + (token * a.heads + head) * hd;
  for (int64_t d = 0; d < hd; ++d) {
    q_hat[d] = attention_query_value(q[d], fp8_math, a.q_scale);
    qk[d] = mul_rn(q_hat[d], grad.dk);
  }
  const int64_t keys = a.key_count[token];
  const int64_t first = a.key_begin[token] * stride + kv_head * hd;

  // The forward's scores, maximum, exponentials, sum and rounded probabilities.
  for (int64_t j = 0; j < keys; ++j) {
    decode_cached(a.k_cache, e4m3, first + j * stride, hd, row);
    e[j] = attention_score(q_hat, row, hd, fwd.score);
  }
  const float m = attention_max_score(e, keys);
  for (int64_t j = 0; j < keys; ++j) e[j] = exp_f32(sub_rn(e[j], m));
  const float l = attention_prob_sum(e, keys);
  for (int64_t j = 0; j < keys; ++j) p_hat[j] = attention_prob_value(e[j], fp8_math);

  // dV_j += Pv_j dO; dP_j = (dO . v^_j) v_unit.
  for (int64_t j = 0; j < keys; ++j) {
    decode_cached(a.v_cache, e4m3, first + j * stride, hd, row);
    dp[j] = attention_prob_grad(dout, row, hd, grad.dp);
    const float w = attention_value_weight(p_hat[j], grad.prob, l);
    float* dv = args.dv + first + j * stride;
    for (int64_t d = 0; d < hd; ++d) dv[d] = add_rn(dv[d], mul_rn(w, dout[d]));
  }
  // D = sum_j P_j dP_j; dS_j = P_j (dP_j - D), kept in e.
  const float dsum = attention_prob_grad_dot(e, dp, keys, l);
  for (int64_t j = 0; j < keys; ++j) e[j] = attention_normalized_prob(e[j], l);
  for (int64_t j = 0; j < keys; ++j) e[j] = attention_score_grad(e[j], dp[j], dsum);

  // dq = (sum_j dS_j k^_j) * dq scale; dK_j += dS_j (q^ * dk scale).
  for (int64_t d = 0; d < hd; ++d) acc[d] = 0.0f;
  for (int64_t j = 0; j < keys; ++j) {
    decode_cached(a.k_cache, e4m3, first + j * stride, hd, row);
    const float ds = e[j];
    float* dk = args.dk + first + j * stride;
    for (int64_t d = 0; d < hd; ++d) {
      acc[d] = add_rn(acc[d], mul_rn(ds, row[d]));
      dk[d] = add_rn(dk[d], mul_rn(ds, qk[d]));
    }
  }
  float* dq = args.dq + (token * a.heads + head) * hd;
  for (int64_t d = 0; d < hd; ++d) dq[d] = mul_rn(acc[d], grad.dq);
}

}  // namespace

void check_attention_backward_key_ranges(const AttentionBackwardArgs& args) {
  for (int64_t t = 0; t < args.forward.tokens; ++t) check_attention_backward_keys(args, t);
}

void attention_backward_kv_heads(const AttentionBackwardArgs& args, int64_t begin, int64_t end,
                                 std::vector<float>& scratch) {
  const AttentionArgs& a = args.forward;
  const bool e4m3 = a.kv_format == KvFormat::e4m3, fp8_math = a.math == AttentionMath::fp8;
  const AttentionScales fwd = attention_scales(e4m3, fp8_math, a.q_scale, a.k_scale, a.v_scale, a.softmax_scale);
  const AttentionGradScales grad =
      attention_grad_scales(e4m3, fp8_math, a.q_scale, a.k_scale, a.v_scale, a.softmax_scale);
  const size_t needed = static_cast<size_t>(scratch_floats(a.head_dim, a.max_key_count));
  if (scratch.size() < needed) scratch.resize(needed);
  const int64_t group = a.heads / a.kv_heads;
  for (int64_t kv_head = begin; kv_head < end; ++kv_head)
    for (int64_t t = 0; t < a.tokens; ++t)
      for (int64_t h = kv_head * group; h < (kv_head + 1) * group; ++h)
        isa_dispatch<attention_backward_head>(args, fwd, grad, t, h, scratch.data());
}

}  // namespace fp8rl::cpu
