// The output head of a recorded training pass, over the tokens whose
// next-token log-prob enters the loss, in chunks of rows so that only
// [chunk, vocab] logits exist at once. Its arithmetic is ModelRunner's head:
// final RMSNorm, then policy::HeadLogits (BF16 or FP8 as the recipe's head),
// so log-probs equal the rollout's bit for bit.
//
//   logprobs(): logp[i] = log softmax(logits(row i) / T)[target i]
//   backward(): from dL/dlogp, accumulates dL/d(final residual) into the
//               residual gradient's rows, and the final norm's and the head's
//               weight gradients (dgrad and wgrad in the head's precision,
//               as any linear layer's: linear_grads.h, straight-through over
//               the rounding or quantization). The logits are computed again
//               rather than kept.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model_config.h"
#include "core/policy/compiled_model.h"
#include "core/policy/device_array.h"
#include "core/policy/head_logits.h"
#include "core/train/linear_grads.h"

namespace fp8rl::train {

// The head's rows: rows[i] indexes the pass's tokens, targets[i] is the token
// its logits predict. Both [wanted], host.
struct HeadRows {
  std::vector<int32_t> rows;
  std::vector<int32_t> targets;
  size_t size() const { return rows.size(); }
};

struct HeadGrads {
  float* final_norm = nullptr;  // [hidden], accumulated
  float* head = nullptr;        // [vocab, hidden], accumulated (the embedding's when tied)
};

class TokenHead {
 public:
  TokenHead(Backend& backend, const model::ModelConfig& config, int64_t chunk_rows = 256);

  // final_residual: [pass tokens, hidden]; logp: [rows.size()] host.
  void logprobs(const policy::CompiledModel& model, const float* final_residual, const HeadRows& rows,
                float temperature, float* logp);

  // grad_logp, entropy: [rows.size()] host. dresidual: [pass tokens, hidden],
  // accumulated. head_transposed: the head's W^T [hidden, vocab] in its precision.
  void backward(const policy::CompiledModel& model, const policy::LinearWeights& head_transposed,
                const float* final_residual, int64_t pass_tokens, const HeadRows& rows, float temperature,
                const float* grad_logp, float* dresidual, const HeadGrads& grads, float* entropy);

 private:
  // Gathers rows [begin, begin + count), normalizes them and computes their logits.
  void chunk_logits(const policy::CompiledModel& model, const float* final_residual, const HeadRows& rows, size_t begin,
                    int64_t count, float temperature);

  Backend& backend_;
  model::ModelConfig config_;
  int64_t chunk_rows_;
  DeviceArray<int32_t> rows_, targets_;  // [chunk]
  DeviceArray<int64_t> row_indices_;     // [chunk] rows_ widened for gather_rows
  DeviceArray<SamplingRow> params_;      // [chunk]
  DeviceArray<float> gathered_;          // [chunk, hidden] final residual rows
  DeviceArray<float> normed_;            // [chunk, hidden]
  policy::HeadLogits head_logits_;
  DeviceArray<float> logits_;            // [chunk, vocab]; dlogits in backward
  DeviceArray<float> values_;            // [chunk] log-probs or coefficients
  DeviceArray<float> entropy_;           // [chunk]
  DeviceArray<float> dnormed_;           // [chunk, hidden]
  DeviceArray<float> dhead_;             // [vocab, hidden] one chunk's head gradient
  LinearGradScratch scratch_;
};

}  // namespace fp8rl::train
