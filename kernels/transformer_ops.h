// Arguments of the transformer operations of kernels/backend.h. The exact
// arithmetic of each operation is defined once, in kernels/common (host and
// device functions), so that the CPU backend is the reference the CUDA
// backend is tested against. Every operation computes each output row from
// its own inputs only, in a fixed order: results do not depend on how many
// rows share a call, which is what makes rollout and training log-probs agree
// bit for bit.
#pragma once

#include <cstdint>

namespace fp8rl {

// How K and V are stored in the cache. FP8 values are E4M3 codes of
// value / scale, with one scale per layer for K and one for V.
enum class KvFormat : uint8_t { bf16 = 0, e4m3 = 1 };

// How Q.K^T and P.V are computed.
//   bf16: q and p rounded to BF16; K and V as stored (FP8 decoded unscaled).
//   fp8:  q quantized to E4M3 with the layer's q_scale, p to E4M3 with the
//         fixed scale 1/448 (p <= 1); needs an E4M3 cache.
// Either way the products are summed in FP32 and the scales are applied once
// to each finished sum (kernels/common/attention_math.h).
enum class AttentionMath : uint8_t { bf16 = 0, fp8 = 1 };

// Stores rows of K (or V) into one layer's cache.
struct KvStoreArgs {
  const float* source = nullptr;        // [tokens, kv_dim] post-RoPE keys (or values)
  const int64_t* cache_rows = nullptr;  // [tokens] destination row of each token
  int64_t tokens = 0;
  int64_t kv_dim = 0;  // kv_heads * head_dim
  KvFormat format = KvFormat::bf16;
  float scale = 1.0f;     // e4m3 only: code = encode(value / scale), saturating
  void* cache = nullptr;  // [cache_row_count, kv_dim] of uint16 (bf16) or uint8 (e4m3)
};

// Causal attention of each query token over a contiguous run of cache rows:
// token t attends to rows key_begin[t] .. key_begin[t] + key_count[t] - 1
// (its sequence's keys at positions 0 .. its own position). Query head h
// reads kv head h / (heads / kv_heads) (GQA).
struct AttentionArgs {
  const float* q = nullptr;            // [tokens, heads, head_dim] post-RoPE queries
  const void* k_cache = nullptr;       // [cache_row_count, kv_heads, head_dim] of kv_format
  const void* v_cache = nullptr;       // [cache_row_count, kv_heads, head_dim] of kv_format
  const int64_t* key_begin = nullptr;  // [tokens]
  const int32_t* key_count = nullptr;  // [tokens], each in [1, max_key_count]
  int64_t tokens = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int32_t max_key_count = 0;  // bound on key_count, sizes scratch
  KvFormat kv_format = KvFormat::bf16;
  AttentionMath math = AttentionMath::bf16;
  float q_scale = 1.0f;        // fp8 math only
  float k_scale = 1.0f;        // e4m3 cache only
  float v_scale = 1.0f;        // e4m3 cache only
  float softmax_scale = 1.0f;  // 1 / sqrt(head_dim)
  float* out = nullptr;        // [tokens, heads, head_dim]
};

// The distribution one row of logits is sampled from (or scored under):
// softmax(logits / temperature) restricted to the top_k most likely tokens,
// then to the smallest most-likely-first prefix whose probability reaches
// top_p, renormalized (kernels/common/sampling_math.h). temperature 0 is
// greedy: the distribution is a point mass on the argmax.
struct SamplingRow {
  float temperature = 1.0f;  // >= 0
  int32_t top_k = 0;         // 0: no limit
  float top_p = 1.0f;        // in (0, 1]
  double uniform = 0.0;      // sample(): the row's random draw, in [0, 1)
};

}  // namespace fp8rl
