// Argument checks of the backward transformer operations
// (transformer_backward_ops.h), shared by every backend so that they refuse
// the same calls with the same messages. As for the forward checks, a row
// count of 0 makes the operation a no-op whose pointers are not looked at.
#pragma once

#include <string>

#include "transformer_backward_ops.h"
#include "transformer_checks.h"

namespace fp8rl {

inline bool check_rms_norm_backward_args(const float* x, const float* weight, const float* dy, int64_t rows,
                                         int64_t dim, float eps, const float* dx, const float* dweight) {
  require(eps >= 0.0f && eps <= 3.4028235e38f, "rms_norm_backward: eps must be finite and >= 0");
  if (!check_rows("rms_norm_backward", rows, "rows", dim, "dim")) return false;
  require_pointers(x && weight && dy && dx && dweight, "rms_norm_backward");
  return true;
}

inline bool check_rope_backward_args(const float* dx, const int32_t* positions, int64_t tokens, int64_t heads,
                                     int64_t head_dim, const float* cos, const float* sin, int64_t table_positions) {
  require(heads > 0, "rope_backward: heads must be positive");
  require(head_dim > 0 && head_dim % 2 == 0,
          "rope_backward: head_dim must be positive and even, got " + std::to_string(head_dim));
  require(table_positions > 0, "rope_backward: table_positions must be positive");
  require_elements(table_positions, head_dim / 2, "rope_backward (table)");
  require(heads <= kMaxElements / head_dim, "rope_backward: heads * head_dim too large");
  if (!check_rows("rope_backward", tokens, "tokens", heads * head_dim, "heads * head_dim")) return false;
  require_pointers(dx && positions && cos && sin, "rope_backward");
  return true;
}

inline bool check_embedding_backward_args(const float* dy, const int32_t* ids, int64_t count, int64_t vocab,
                                          int64_t hidden, const float* dtable) {
  require(vocab > 0, "embedding_backward: vocab must be positive");
  require(hidden > 0, "embedding_backward: hidden must be positive");
  require_elements(vocab, hidden, "embedding_backward (table)");
  if (!check_rows("embedding_backward", count, "count", hidden, "hidden")) return false;
  require_pointers(dy && ids && dtable, "embedding_backward");
  return true;
}

inline bool check_attention_backward_args(const AttentionBackwardArgs& args) {
  AttentionArgs forward = args.forward;
  forward.out = args.dq;  // the forward checks want an output pointer; dq stands in for it
  if (!check_attention_args(forward)) return false;
  require(args.cache_row_count > 0, "attention_backward: cache_row_count must be positive");
  require_elements(args.cache_row_count, args.forward.kv_heads * args.forward.head_dim, "attention_backward (cache)");
  require_pointers(args.dout && args.dq && args.dk && args.dv, "attention_backward");
  return true;
}

// Per-token check of the key range against the cache, for backends that can read them.
inline void check_attention_backward_keys(const AttentionBackwardArgs& args, int64_t token) {
  check_attention_keys(args.forward, token);
  if (args.forward.key_begin[token] + args.forward.key_count[token] > args.cache_row_count)
    fail(Status::invalid_argument, "attention_backward: the key range of token " + std::to_string(token) +
                                       " ends past cache_row_count = " + std::to_string(args.cache_row_count));
}

inline bool check_log_softmax_backward_args(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                            const int32_t* targets, const float* coef, const float* dlogits,
                                            const float* entropy) {
  require(vocab <= 2147483647, "log_softmax_backward: vocab must fit in int32");
  if (!check_rows("log_softmax_backward", rows, "rows", vocab, "vocab")) return false;
  require_pointers(logits && params && targets && coef && dlogits && entropy, "log_softmax_backward");
  return true;
}

}  // namespace fp8rl
