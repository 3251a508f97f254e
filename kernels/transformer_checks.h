// Argument checks of the transformer operations (transformer_ops.h), shared by
// every backend so that they refuse the same calls with the same messages.
// Row counts (rows, tokens, count) may be 0: the operation then does nothing
// and its pointers are not looked at. Sizes of a row must be positive.
#pragma once

#include <cmath>
#include <initializer_list>
#include <string>

#include "backend_checks.h"

namespace fp8rl {

inline bool is_known(KvFormat format) { return format == KvFormat::bf16 || format == KvFormat::e4m3; }
inline bool is_known(AttentionMath math) { return math == AttentionMath::bf16 || math == AttentionMath::fp8; }

inline bool positive_finite(float x) { return x > 0.0f && x <= 3.4028235e38f; }

// Returns false when count is 0. Checks count >= 0, width > 0 and the element count.
inline bool check_rows(const char* op, int64_t count, const char* count_name, int64_t width, const char* width_name) {
  require(count >= 0, std::string(op) + ": " + count_name + " must be non-negative, got " + std::to_string(count));
  require(width > 0, std::string(op) + ": " + width_name + " must be positive, got " + std::to_string(width));
  require_elements(count, width, op);
  return count > 0;
}

inline void require_pointers(bool all_present, const char* op) {
  require(all_present, std::string(op) + ": null pointer");
}

inline bool check_embedding_args(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids,
                                 int64_t count, const float* out) {
  require(vocab > 0, "embedding: vocab must be positive");
  require_elements(vocab, hidden > 0 ? hidden : 1, "embedding (table)");
  if (!check_rows("embedding", count, "count", hidden, "hidden")) return false;
  require_pointers(table && ids && out, "embedding");
  return true;
}

inline bool check_rms_norm_args(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                                const float* out) {
  require(eps >= 0.0f && eps <= 3.4028235e38f, "rms_norm: eps must be finite and >= 0");
  if (!check_rows("rms_norm", rows, "rows", dim, "dim")) return false;
  require_pointers(x && weight && out, "rms_norm");
  return true;
}

inline bool check_rope_args(const float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                            const float* cos, const float* sin, int64_t table_positions) {
  require(heads > 0, "rope: heads must be positive");
  require(head_dim > 0 && head_dim % 2 == 0,
          "rope: head_dim must be positive and even, got " + std::to_string(head_dim));
  require(table_positions > 0, "rope: table_positions must be positive");
  require_elements(table_positions, head_dim / 2, "rope (table)");
  require(heads <= kMaxElements / head_dim, "rope: heads * head_dim too large");
  if (!check_rows("rope", tokens, "tokens", heads * head_dim, "heads * head_dim")) return false;
  require_pointers(x && positions && cos && sin, "rope");
  return true;
}

inline bool check_elementwise_args(const char* op, int64_t count, std::initializer_list<const void*> pointers) {
  if (!check_rows(op, count, "count", 1, "width")) return false;
  for (const void* p : pointers) require_pointers(p != nullptr, op);
  return true;
}

inline bool check_add_bias_args(const float* x, const float* bias, int64_t rows, int64_t cols) {
  if (!check_rows("add_bias", rows, "rows", cols, "cols")) return false;
  require_pointers(x && bias, "add_bias");
  return true;
}

inline bool check_gather_rows_args(const float* x, int64_t cols, const int64_t* rows, int64_t count, const float* out) {
  if (!check_rows("gather_rows", count, "count", cols, "cols")) return false;
  require_pointers(x && rows && out, "gather_rows");
  return true;
}

inline bool check_kv_store_args(const KvStoreArgs& args) {
  require(is_known(args.format), "kv_store: unknown KV format");
  if (args.format == KvFormat::e4m3)
    require(positive_finite(args.scale), "kv_store: the E4M3 scale must be positive and finite");
  if (!check_rows("kv_store", args.tokens, "tokens", args.kv_dim, "kv_dim")) return false;
  require_pointers(args.source && args.cache_rows && args.cache, "kv_store");
  return true;
}

inline bool check_attention_args(const AttentionArgs& args) {
  require(is_known(args.kv_format), "attention: unknown KV format");
  require(is_known(args.math), "attention: unknown attention math");
  require(args.math == AttentionMath::bf16 || args.kv_format == KvFormat::e4m3,
          "attention: FP8 math needs an E4M3 KV cache");
  require(args.heads > 0 && args.kv_heads > 0 && args.head_dim > 0,
          "attention: heads, kv_heads and head_dim must be positive");
  require(args.heads % args.kv_heads == 0, "attention: heads (" + std::to_string(args.heads) +
                                               ") must be a multiple of kv_heads (" + std::to_string(args.kv_heads) +
                                               ")");
  require(args.heads <= kMaxElements / args.head_dim, "attention: heads * head_dim too large");
  require(args.max_key_count > 0, "attention: max_key_count must be positive");
  require(std::isfinite(args.softmax_scale), "attention: softmax_scale must be finite");
  if (args.math == AttentionMath::fp8)
    require(positive_finite(args.q_scale), "attention: q_scale must be positive and finite");
  if (args.kv_format == KvFormat::e4m3)
    require(positive_finite(args.k_scale) && positive_finite(args.v_scale),
            "attention: k_scale and v_scale must be positive and finite");
  if (!check_rows("attention", args.tokens, "tokens", args.heads * args.head_dim, "heads * head_dim")) return false;
  require_pointers(args.q && args.k_cache && args.v_cache && args.key_begin && args.key_count && args.out, "attention");
  return true;
}

// Per-token check of the key range, for backends that can read key_begin and key_count.
inline void check_attention_keys(const AttentionArgs& args, int64_t token) {
  const int32_t count = args.key_count[token];
  if (count < 1 || count > args.max_key_count)
    fail(Status::invalid_argument, "attention: key_count[" + std::to_string(token) + "] = " + std::to_string(count) +
                                       " is outside [1, max_key_count = " + std::to_string(args.max_key_count) + "]");
  if (args.key_begin[token] < 0)
    fail(Status::invalid_argument, "attention: key_begin[" + std::to_string(token) + "] is negative");
}

inline bool check_sampling_args(const char* op, const float* logits, int64_t rows, int64_t vocab,
                                const SamplingRow* params, const void* out1, const void* out2) {
  require(vocab <= 2147483647, std::string(op) + ": vocab must fit in int32");
  if (!check_rows(op, rows, "rows", vocab, "vocab")) return false;
  require_pointers(logits && params && out1 && out2, op);
  return true;
}

inline bool check_transpose_args(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) {
  require(element_bytes == 1 || element_bytes == 2 || element_bytes == 4,
          "transpose: element_bytes must be 1, 2 or 4, got " + std::to_string(element_bytes));
  if (!check_rows("transpose", rows, "rows", cols, "cols")) return false;
  require_pointers(x && out, "transpose");
  return true;
}

}  // namespace fp8rl
