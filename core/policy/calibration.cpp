#include "core/policy/calibration.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/policy/model_runner.h"

namespace fp8rl::policy {
namespace {

// Per-token maxima of |x| over [tokens, cols] in backend memory, appended to out.
void append_row_maxima(Backend& backend, const float* x, int64_t tokens, int64_t cols, std::vector<float>& out) {
  std::vector<float> host(static_cast<size_t>(tokens * cols));
  backend.download(host.data(), x, host.size() * sizeof(float));
  for (int64_t t = 0; t < tokens; ++t) {
    float amax = 0.0f;
    for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(host[static_cast<size_t>(t * cols + c)]));
    out.push_back(amax);
  }
}

}  // namespace

void validate_calibration_options(const CalibrationOptions& options) {
  require(options.percentile > 0.0 && options.percentile <= 100.0,
          "calibration: percentile must be in (0, 100], got " + std::to_string(options.percentile));
  require(std::isfinite(options.margin) && options.margin >= 1.0,
          "calibration: margin must be finite and >= 1, got " + std::to_string(options.margin));
  require(std::isfinite(options.max_value) && options.max_value > 0.0,
          "calibration: max_value must be finite and > 0, got " + std::to_string(options.max_value));
}

float nearest_rank_percentile(std::vector<float> values, double percentile) {
  require(!values.empty(), "percentile of no values");
  const double rank = std::ceil(percentile / 100.0 * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index), values.end());
  return values[index];
}

float calibrated_scale(float magnitude, const CalibrationOptions& options) {
  if (!(magnitude > 0.0f) || !std::isfinite(magnitude)) return 1.0f;
  const float scale = static_cast<float>(static_cast<double>(magnitude) * options.margin / options.max_value);
  return std::isnormal(scale) ? scale : 1.0f;
}

AttentionScales measure_attention_scales(Policy& policy, const rollout::TokenSequences& sequences,
                                         const CalibrationOptions& options) {
  validate_calibration_options(options);
  const model::ModelConfig& config = policy.config();
  validate_sequences(sequences, config.vocab_size, config.max_position_embeddings, "calibration sequence");
  Backend& backend = policy.context().backend();
  const size_t layers = static_cast<size_t>(config.num_layers);
  std::vector<std::vector<float>> q_maxima(layers), k_maxima(layers), v_maxima(layers);
  const int64_t q_dim = model::q_dim(config), kv_dim = model::kv_dim(config);
  const ActivationObserver observe = [&](size_t layer, int64_t tokens, const float* q, const float* k, const float* v) {
    append_row_maxima(backend, q, tokens, q_dim, q_maxima[layer]);
    append_row_maxima(backend, k, tokens, kv_dim, k_maxima[layer]);
    append_row_maxima(backend, v, tokens, kv_dim, v_maxima[layer]);
  };
  TokenBatch batch;
  int64_t first_row = 0;
  for (int64_t i = 0; i < sequences.count; ++i) {
    for (int64_t p = 0; p < sequences.length(i); ++p) {
      batch.add(sequences.sequence(i)[p], static_cast<int32_t>(p), first_row, false);
    }
    first_row += sequences.length(i);
  }
  KvCache cache(backend, policy.compiled(), kv_dim, first_row);
  policy.runner().run(
      policy.compiled(), policy.attention_scales(), batch, cache, PassLimits{}, [](int64_t, int64_t, const float*) {},
      observe);

  AttentionScales scales;
  for (size_t layer = 0; layer < layers; ++layer) {
    scales.q.push_back(calibrated_scale(nearest_rank_percentile(q_maxima[layer], options.percentile), options));
    scales.k.push_back(calibrated_scale(nearest_rank_percentile(k_maxima[layer], options.percentile), options));
    scales.v.push_back(calibrated_scale(nearest_rank_percentile(v_maxima[layer], options.percentile), options));
  }
  return scales;
}

void recalibrate_attention_scales(Policy& policy, const rollout::TokenSequences& sequences,
                                  const CalibrationOptions& options) {
  policy.set_attention_scales(measure_attention_scales(policy, sequences, options));
}

}  // namespace fp8rl::policy
