#include "attention_cpu.h"

#include "../common/attention_math.h"
#include "../transformer_checks.h"
#include "isa_dispatch.h"

namespace fp8rl::cpu {
namespace {

struct UnitShape {
  int64_t group;  // query heads per kv head
  int64_t head_dim;
  int64_t kv_stride;  // elements between consecutive cache rows (kv_heads * head_dim)
  int64_t max_keys;
};

// The floats of scratch one unit uses, laid out as
//   q_hat [group, head_dim], probs [group, max_keys], acc [group, head_dim], row [head_dim],
//   then max_keys bytes of E4M3 codes of p (FP8 math).
int64_t scratch_floats(const UnitShape& s) {
  return s.group * (2 * s.head_dim + s.max_keys) + s.head_dim + (s.max_keys + 3) / 4;
}

// Cached rows are strided (all kv heads of a position lie between two rows of
// one head) and come from memory after each pass streams the weights, so the
// hardware prefetchers lag; fetch a few keys ahead explicitly.
constexpr int64_t kPrefetchKeys = 8;

inline void prefetch_cached_row(const void* cache, bool e4m3, int64_t offset, int64_t n) {
  const char* begin = static_cast<const char*>(cache) + offset * (e4m3 ? 1 : 2);
  const int64_t bytes = n * (e4m3 ? 1 : 2);
  for (int64_t line = 0; line < bytes; line += 64) __builtin_prefetch(begin + line);
}

// out [n] = fp8_decode(codes [n]).
inline void decode_e4m3(const GemmKernels& kernels, const uint8_t* codes, int64_t n, float* out) {
  kernels.decode_e4m3(codes, n, out);
}

// One cached K or V row (of one kv head) as the products see it: out [n].
inline void decode_cached_row(const GemmKernels& kernels, const void* cache, bool e4m3, int64_t offset, int64_t n,
                              float* out) {
  if (e4m3) {
    decode_e4m3(kernels, static_cast<const uint8_t*>(cache) + offset, n, out);
  } else {
    kernels.decode_bf16(static_cast<const uint16_t*>(cache) + offset, n, out);
  }
}

// probs [keys] holds the scores on entry and p^ on exit; returns l. FP8 math
// splits attention_prob_value into its encode (vectorized here) and its
// decode (the SIMD decoder): the same bits, without a scalar decode per key.
FP8RL_ISA_BODY float softmax_weights(const GemmKernels& kernels, float* probs, int64_t keys, bool fp8_math,
                                     uint8_t* codes) {
  const float m = attention_max_score(probs, keys);
  for (int64_t j = 0; j < keys; ++j) probs[j] = exp_f32(sub_rn(probs[j], m));
  const float l = attention_prob_sum(probs, keys);  // sequential: the order is the contract
  if (!fp8_math) {
    for (int64_t j = 0; j < keys; ++j) probs[j] = attention_prob_value(probs[j], false);
    return l;
  }
  for (int64_t j = 0; j < keys; ++j)
    codes[j] = fp8_encode(mul_rn(probs[j], kAttentionProbScale), Fp8Format::e4m3, /*saturate=*/true);
  decode_e4m3(kernels, codes, keys, probs);
  return l;
}

// probs[h, j] = score of query head h against key j, for the unit's heads.
FP8RL_ISA_BODY void score_keys(const GemmKernels& kernels, const void* k_cache, bool e4m3, int64_t first_offset,
                               int64_t keys, const float* q_hat, const UnitShape& s, int64_t heads, float score_scale,
                               float* row, float* probs) {
  for (int64_t j = 0; j < keys; ++j) {
    if (j + kPrefetchKeys < keys)
      prefetch_cached_row(k_cache, e4m3, first_offset + (j + kPrefetchKeys) * s.kv_stride, s.head_dim);
    decode_cached_row(kernels, k_cache, e4m3, first_offset + j * s.kv_stride, s.head_dim, row);
    for (int64_t h = 0; h < heads; ++h)
      probs[h * s.max_keys + j] = attention_score(q_hat + h * s.head_dim, row, s.head_dim, score_scale);
  }
}

// acc[h, :] = sum over keys j, in key order, of p^[h, j] * v^[j, :].
FP8RL_ISA_BODY void accumulate_values(const GemmKernels& kernels, const void* v_cache, bool e4m3, int64_t first_offset,
                                      int64_t keys, const float* probs, const UnitShape& s, int64_t heads, float* row,
                                      float* acc) {
  for (int64_t i = 0; i < heads * s.head_dim; ++i) acc[i] = 0.0f;
  for (int64_t j = 0; j < keys; ++j) {
    if (j + kPrefetchKeys < keys)
      prefetch_cached_row(v_cache, e4m3, first_offset + (j + kPrefetchKeys) * s.kv_stride, s.head_dim);
    decode_cached_row(kernels, v_cache, e4m3, first_offset + j * s.kv_stride, s.head_dim, row);
    for (int64_t h = 0; h < heads; ++h) {
      const float p = probs[h * s.max_keys + j];
      float* a = acc + h * s.head_dim;
      for (int64_t d = 0; d < s.head_dim; ++d) a[d] = add_rn(a[d], mul_rn(p, row[d]));
    }
  }
}

// Query heads [first_head, first_head + heads) of one token, all reading kv
// head first_head / group.
void attention_unit(const GemmKernels& kernels, const AttentionArgs& args, const UnitShape& s, int64_t token,
                    int64_t first_head, int64_t heads, float* scratch) {
  const bool e4m3 = args.kv_format == KvFormat::e4m3, fp8_math = args.math == AttentionMath::fp8;
  const AttentionScales scales =
      attention_scales(e4m3, fp8_math, args.q_scale, args.k_scale, args.v_scale, args.softmax_scale);
  float* q_hat = scratch;
  float* probs = q_hat + s.group * s.head_dim;
  float* acc = probs + s.group * s.max_keys;
  float* row = acc + s.group * s.head_dim;

  const int64_t kv_head = first_head / s.group;
  const float* q = args.q + (token * args.heads + first_head) * s.head_dim;
  for (int64_t i = 0; i < heads * s.head_dim; ++i) q_hat[i] = attention_query_value(q[i], fp8_math, args.q_scale);

  const int64_t keys = args.key_count[token];
  const int64_t first_offset = args.key_begin[token] * s.kv_stride + kv_head * s.head_dim;
  isa_dispatch<score_keys>(kernels, args.k_cache, e4m3, first_offset, keys, q_hat, s, heads, scales.score, row, probs);
  float prob_sums[1024];  // group <= 1024 (checked by the caller)
  uint8_t* prob_codes = reinterpret_cast<uint8_t*>(row + s.head_dim);
  for (int64_t h = 0; h < heads; ++h)
    prob_sums[h] = isa_dispatch<softmax_weights>(kernels, probs + h * s.max_keys, keys, fp8_math, prob_codes);

  isa_dispatch<accumulate_values>(kernels, args.v_cache, e4m3, first_offset, keys, probs, s, heads, row, acc);
  float* out = args.out + (token * args.heads + first_head) * s.head_dim;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t d = 0; d < s.head_dim; ++d)
      out[h * s.head_dim + d] = attention_output(acc[h * s.head_dim + d], scales.out, prob_sums[h]);
}

}  // namespace

AttentionPlan plan_attention(const AttentionArgs& args, int threads) {
  const int64_t group = args.heads / args.kv_heads;
  const int64_t pairs = args.tokens * args.kv_heads;
  AttentionPlan plan;
  // Enough units for two per thread; a lone decode token has only kv_heads
  // (token, kv head) pairs, which would leave threads idle.
  const int64_t wanted = (2 * static_cast<int64_t>(threads) + pairs - 1) / pairs;
  plan.group_splits = wanted < 1 ? 1 : (wanted > group ? group : wanted);
  plan.units = pairs * plan.group_splits;
  return plan;
}

void attention_units(const GemmKernels& kernels, const AttentionArgs& args, const AttentionPlan& plan, int64_t begin,
                     int64_t end, AttentionScratch& scratch) {
  const UnitShape shape{args.heads / args.kv_heads, args.head_dim, args.kv_heads * args.head_dim, args.max_key_count};
  require(shape.group <= 1024, "attention: more than 1024 query heads per kv head");
  const size_t needed = static_cast<size_t>(scratch_floats(shape));
  if (scratch.buffer.size() < needed) scratch.buffer.resize(needed);
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t pair = unit / plan.group_splits, split = unit % plan.group_splits;
    const int64_t token = pair / args.kv_heads, kv_head = pair % args.kv_heads;
    const int64_t head_begin = split * shape.group / plan.group_splits;
    const int64_t head_end = (split + 1) * shape.group / plan.group_splits;
    check_attention_keys(args, token);
    attention_unit(kernels, args, shape, token, kv_head * shape.group + head_begin, head_end - head_begin,
                   scratch.buffer.data());
  }
}

}  // namespace fp8rl::cpu
