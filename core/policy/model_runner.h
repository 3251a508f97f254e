// The transformer forward pass over a batch of tokens from any mix of
// sequences: prefill chunks, decode steps and whole training sequences all
// go through the same pass. Each token carries its position and the cache
// rows of its sequence; every operation computes a token's row from that
// row's inputs alone (kernels/transformer_ops.h), so a token's logits are
// bitwise the same whichever other tokens share the pass. That is the whole
// reason generation and training log-probs agree.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/model/model_config.h"
#include "core/policy/compiled_model.h"
#include "core/policy/device_array.h"
#include "core/policy/kv_cache.h"
#include "core/policy/policy.h"
#include "core/policy/rope_table.h"

namespace fp8rl::policy {

// Host description of the tokens of one or more passes, all [tokens].
struct TokenBatch {
  std::vector<int32_t> token_ids;
  std::vector<int32_t> positions;     // position in its sequence
  std::vector<int64_t> key_begin;     // cache row of its sequence's position 0
  std::vector<uint8_t> wants_logits;  // 1: the next-token logits of this token are needed

  void clear();
  void add(int32_t token, int32_t position, int64_t sequence_first_row, bool logits);
  size_t size() const { return token_ids.size(); }
};

// Receives the logits of a run of wanted tokens: first is the index of the
// first of them among all wanted tokens of the batch, in batch order; logits
// is backend memory [count, vocab], valid during the call.
using LogitsSink = std::function<void(int64_t first, int64_t count, const float* logits)>;

// Sees, in every pass, each layer's post-RoPE queries [tokens, q_dim] and
// keys [tokens, kv_dim] and its values [tokens, kv_dim] (backend memory,
// valid during the call): what recalibration measures.
using ActivationObserver =
    std::function<void(size_t layer, int64_t tokens, const float* q, const float* k, const float* v)>;

struct PassLimits {
  int64_t max_tokens = 2048;     // tokens per forward pass
  int64_t max_logit_rows = 256;  // [rows, vocab] FP32 logits held at once
};

class ModelRunner {
 public:
  ModelRunner(Backend& backend, const model::ModelConfig& config);

  // Runs the batch in consecutive passes within limits, writing each token's
  // K/V into cache rows key_begin + position, then attending causally over
  // its sequence's rows. Tokens of a sequence must come in position order
  // (earlier passes fill the rows later ones read). Positions and ids must
  // be valid (callers check them).
  void run(const CompiledModel& model, const AttentionScales& scales, const TokenBatch& batch, KvCache& cache,
           const PassLimits& limits, const LogitsSink& sink, const ActivationObserver& observer = {});

 private:
  struct Range {
    size_t begin, end;
    int64_t logits_before;  // wanted tokens before begin
  };
  void pass(const CompiledModel& model, const AttentionScales& scales, const TokenBatch& batch, const Range& range,
            KvCache& cache, const LogitsSink& sink, const ActivationObserver& observer);
  void upload_pass_indices(const TokenBatch& batch, const Range& range);
  void ensure_workspace(int64_t tokens, int64_t logit_rows);
  void layer_forward(const CompiledModel& model, size_t index, const AttentionScales& scales, int64_t tokens,
                     KvCache& cache, const ActivationObserver& observer);
  void linear(const LinearWeights& weights, ScaleFormat scale_format, const float* x, int64_t rows, float* y);
  void head(const CompiledModel& model, int64_t rows, float* logits);

  Backend& backend_;
  model::ModelConfig config_;
  RopeTable rope_;
  int64_t capacity_tokens_ = 0;
  int64_t capacity_logit_rows_ = 0;
  int32_t max_key_count_ = 0;
  // Per-pass token data on the backend, [tokens].
  DeviceArray<int32_t> ids_, positions_, key_count_;
  DeviceArray<int64_t> cache_rows_, key_begin_, logit_rows_;
  // Activations.
  DeviceArray<float> residual_;      // [tokens, hidden]
  DeviceArray<float> normed_;        // [tokens, hidden]
  DeviceArray<float> q_;             // [tokens, q_dim]
  DeviceArray<float> k_;             // [tokens, kv_dim]
  DeviceArray<float> v_;             // [tokens, kv_dim]
  DeviceArray<float> attention_;     // [tokens, q_dim]
  DeviceArray<float> projected_;     // [tokens, hidden]
  DeviceArray<float> gate_;          // [tokens, intermediate]
  DeviceArray<float> up_;            // [tokens, intermediate]
  DeviceArray<uint8_t> a_codes_;     // [tokens, max_in] quantized linear input
  DeviceArray<float> a_scales_;      // [tokens, ceil(max_in / 128)]
  DeviceArray<uint16_t> a_bf16_;     // [tokens, max_in] BF16 linear input
  DeviceArray<float> head_in_;       // [logit_rows, hidden]
  DeviceArray<uint16_t> head_bf16_;  // [logit_rows, hidden]
  DeviceArray<float> logits_;        // [logit_rows, vocab]
};

}  // namespace fp8rl::policy
