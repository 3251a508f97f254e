// Recalibration of the per-layer attention scales (the FP8 KV cache's K and V
// scales, and Q's for FP8 attention) from a full-sequence forward pass, as
// training runs one: for each layer and each of Q, K, V (post-RoPE for Q and
// K), the largest magnitude of every token's row, the given percentile of
// those per-token maxima over all tokens (nearest rank), times the margin,
// mapped onto the FP8 maximum: scale = percentile * margin / max_value. Rows
// above the percentile saturate; the percentile keeps rare outliers from
// costing every other token its precision.
#pragma once

#include <cstdint>
#include <vector>

#include "core/policy/device_array.h"
#include "core/policy/model_runner.h"
#include "core/policy/policy.h"
#include "core/rollout/token_sequences.h"

namespace fp8rl::dist {
class Collectives;
}

namespace fp8rl::policy {

struct CalibrationOptions {
  double percentile = 99.9;  // in (0, 100]
  double margin = 1.05;      // >= 1 leaves headroom above the percentile
  double max_value = 448.0;  // the E4M3 maximum the calibrated magnitude maps to
};

// Throws invalid_argument naming the field.
void validate_calibration_options(const CalibrationOptions& options);

// The nearest-rank percentile of values (sorted ascending, the element at
// rank ceil(percentile / 100 * n)); n > 0.
float nearest_rank_percentile(std::vector<float> values, double percentile);

// The scale a calibrated magnitude gives: magnitude * margin / max_value, or
// 1 for a magnitude of 0 (nothing to represent), as a positive normal float.
float calibrated_scale(float magnitude, const CalibrationOptions& options);

// Collects the per-token row maxima of Q, K and V from forward passes (its
// observer() plugs into ModelRunner::run) and turns them into scales.
class AttentionStatistics {
 public:
  AttentionStatistics(Backend& backend, const model::ModelConfig& config);
  // Valid while this object lives.
  ActivationObserver observer();
  bool empty() const;
  void clear();
  // Throws invalid_argument when nothing was observed.
  AttentionScales scales(const CalibrationOptions& options) const;
  // Replaces each layer's maxima by every rank's, rank after rank, so that
  // every rank takes one percentile over all ranks' tokens: the same scales.
  void merge_over_ranks(dist::Collectives& collectives);

 private:
  void append_row_maxima(const float* x, int64_t tokens, int64_t cols, std::vector<float>& out);

  Backend& backend_;
  DeviceArray<float> maxima_;  // [tokens] of the last observed tensor
  int64_t q_dim_, kv_dim_;
  std::vector<std::vector<float>> q_, k_, v_;  // [layer][observed tokens]
};

// Runs the policy over sequences (as score_completions does; the batch need
// not be the one generation used) and returns the scales that result.
AttentionScales measure_attention_scales(Policy& policy, const rollout::TokenSequences& sequences,
                                         const CalibrationOptions& options);

// measure_attention_scales, then Policy::set_attention_scales.
void recalibrate_attention_scales(Policy& policy, const rollout::TokenSequences& sequences,
                                  const CalibrationOptions& options);

}  // namespace fp8rl::policy
