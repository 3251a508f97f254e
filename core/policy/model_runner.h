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

#include "core/blocks/linear_forward.h"
#include "core/blocks/moe_state.h"
#include "core/model/model_config.h"
#include "core/policy/compiled_model.h"
#include "core/policy/device_array.h"
#include "core/policy/head_logits.h"
#include "core/policy/kv_cache.h"
#include "core/policy/pass_recorder.h"
#include "core/policy/pass_upload.h"
#include "core/policy/policy.h"
#include "core/policy/rope_table.h"
#include "core/policy/token_batch.h"

namespace fp8rl::policy {

// Receives the logits of a run of wanted tokens: first is the index of the
// first of them among all wanted tokens of the batch, in batch order; logits
// is backend memory [count, vocab], valid during the call, as are the pass's
// ModelRunner::pass_indices() (row_params, row_targets: those rows' inputs).
using LogitsSink = std::function<void(int64_t first, int64_t count, const float* logits)>;

// Sees, in every pass, each layer's post-RoPE queries [tokens, q_dim] and
// keys [tokens, kv_dim] and its values [tokens, kv_dim] (backend memory,
// valid during the call): what recalibration measures.
using ActivationObserver =
    std::function<void(size_t layer, int64_t tokens, const float* q, const float* k, const float* v)>;

// Sees, in every pass, each sparse layer's expert choices: chosen [tokens, k]
// host memory, best first, for the batch's tokens [first, first + tokens).
using RoutingObserver = std::function<void(size_t layer, int64_t first, int64_t tokens, const int32_t* chosen)>;

// The attention() arguments of layer `index` (its precision and scales) over
// a pass's tokens with those indices; the backward pass reuses them.
AttentionArgs attention_args(const model::ModelConfig& config, const CompiledLayer& layer, size_t index,
                             const AttentionScales& scales, const PassIndices& pass, int64_t tokens, const float* q,
                             const KvCache& cache, float* out);

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
  // be valid (callers check them). Each pass makes one upload (pass_upload.h;
  // two more when it reaches positions the RoPE tables lack, see
  // prepare_positions) and no download of its own.
  // With a recorder (training), the batch must fit one pass, which the
  // recorder then keeps (pass_recorder.h).
  void run(const CompiledModel& model, const AttentionScales& scales, const TokenBatch& batch, KvCache& cache,
           const PassLimits& limits, const LogitsSink& sink, const ActivationObserver& observer = {},
           PassRecorder* recorder = nullptr, const RoutingObserver& routing = {});

  // Builds the RoPE tables for positions [0, positions) now, so that no
  // later pass below that length uploads them (generation knows its longest
  // sequence up front; its steps then make only their own uploads).
  void prepare_positions(int64_t positions) { rope_.ensure(backend_, positions); }

  Backend& backend() const { return backend_; }
  const PassIndices& pass_indices() const { return pass_; }
  const RopeTable& rope() const { return rope_; }

 private:
  struct Range {
    size_t begin, end;
    int64_t logits_before;  // wanted tokens before begin
  };
  void pass(const CompiledModel& model, const AttentionScales& scales, const TokenBatch& batch, const Range& range,
            KvCache& cache, const LogitsSink& sink, const ActivationObserver& observer, PassRecorder* recorder,
            const RoutingObserver& routing);
  void ensure_workspace(int64_t tokens, int64_t logit_rows);
  LayerActivations workspace_activations();
  // The batch's tokens [first, first + tokens) through layer `index`.
  void layer_forward(const CompiledModel& model, size_t index, const AttentionScales& scales, int64_t first,
                     int64_t tokens, KvCache& cache, const ActivationObserver& observer, const RoutingObserver& routing,
                     const LayerActivations& out);
  void linear(std::initializer_list<blocks::LinearOutput> outputs, ScaleFormat scale_format, const float* x,
              int64_t rows);
  void head(const CompiledModel& model, int64_t rows, float* logits);

  Backend& backend_;
  model::ModelConfig config_;
  RopeTable rope_;
  blocks::MoeState moe_workspace_;  // the sparse layers' routing and experts, reused layer after layer
  int64_t capacity_tokens_ = 0;
  int64_t capacity_logit_rows_ = 0;
  PackedBuffer upload_;  // the current pass's indices (pass_upload.h)
  PassIndices pass_;     // pointers into upload_
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
  HeadLogits head_logits_;
  DeviceArray<float> logits_;        // [logit_rows, vocab]
};

}  // namespace fp8rl::policy
