#include "core/policy/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/dist/collectives.h"
#include "core/rollout/sequence_batch.h"

namespace fp8rl::policy {

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

AttentionStatistics::AttentionStatistics(Backend& backend, const model::ModelConfig& config)
    : backend_(backend),
      q_dim_(model::q_dim(config)),
      kv_dim_(model::kv_dim(config)),
      q_(static_cast<size_t>(config.num_layers)),
      k_(q_.size()),
      v_(q_.size()) {}

// Per-token maxima of |x| [tokens, cols] in backend memory, taken on the
// backend: only [tokens] values come to the host for the percentile.
void AttentionStatistics::append_row_maxima(const float* x, int64_t tokens, int64_t cols, std::vector<float>& out) {
  maxima_.reserve_discarding(backend_, static_cast<size_t>(tokens));
  backend_.row_abs_max(x, tokens, cols, maxima_.data());
  const size_t first = out.size();
  out.resize(first + static_cast<size_t>(tokens));
  maxima_.download(out.data() + first, static_cast<size_t>(tokens));
}

ActivationObserver AttentionStatistics::observer() {
  return [this](size_t layer, int64_t tokens, const float* q, const float* k, const float* v) {
    append_row_maxima(q, tokens, q_dim_, q_[layer]);
    append_row_maxima(k, tokens, kv_dim_, k_[layer]);
    append_row_maxima(v, tokens, kv_dim_, v_[layer]);
  };
}

bool AttentionStatistics::empty() const { return q_.empty() || q_[0].empty(); }

void AttentionStatistics::clear() {
  for (auto* maxima : {&q_, &k_, &v_})
    for (std::vector<float>& layer : *maxima) layer.clear();
}

// One gather: each rank sends, per array (q, k, v of each layer), its count
// and then all values; the arrays are rebuilt rank after rank.
void AttentionStatistics::merge_over_ranks(dist::Collectives& collectives) {
  if (!collectives.distributed()) return;
  std::vector<std::vector<float>*> arrays;
  for (auto* maxima : {&q_, &k_, &v_})
    for (std::vector<float>& layer : *maxima) arrays.push_back(&layer);
  std::vector<uint8_t> mine;
  auto append = [&mine](const void* data, size_t bytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    mine.insert(mine.end(), p, p + bytes);
  };
  for (const std::vector<float>* a : arrays) {
    const auto count = static_cast<int64_t>(a->size());
    append(&count, sizeof(count));
  }
  for (const std::vector<float>* a : arrays) append(a->data(), a->size() * sizeof(float));

  std::vector<int64_t> counts;
  const std::vector<uint8_t> all = collectives.gather_host_bytes(mine, &counts);
  for (std::vector<float>* a : arrays) a->clear();
  const std::vector<int64_t> offsets = dist::part_offsets(counts);
  for (size_t r = 0; r < counts.size(); ++r) {
    const uint8_t* header = all.data() + offsets[r];
    const uint8_t* values = header + arrays.size() * sizeof(int64_t);
    for (size_t i = 0; i < arrays.size(); ++i) {
      int64_t count = 0;
      std::memcpy(&count, header + i * sizeof(int64_t), sizeof(count));
      const size_t first = arrays[i]->size();
      arrays[i]->resize(first + static_cast<size_t>(count));
      std::memcpy(arrays[i]->data() + first, values, static_cast<size_t>(count) * sizeof(float));
      values += static_cast<size_t>(count) * sizeof(float);
    }
  }
}

AttentionScales AttentionStatistics::scales(const CalibrationOptions& options) const {
  validate_calibration_options(options);
  require(!empty(), "calibration: no activations were observed");
  AttentionScales scales;
  for (size_t layer = 0; layer < q_.size(); ++layer) {
    scales.q.push_back(calibrated_scale(nearest_rank_percentile(q_[layer], options.percentile), options));
    scales.k.push_back(calibrated_scale(nearest_rank_percentile(k_[layer], options.percentile), options));
    scales.v.push_back(calibrated_scale(nearest_rank_percentile(v_[layer], options.percentile), options));
  }
  return scales;
}

AttentionScales measure_attention_scales(Policy& policy, const rollout::TokenSequences& sequences,
                                         const CalibrationOptions& options) {
  validate_calibration_options(options);
  const model::ModelConfig& config = policy.config();
  validate_sequences(sequences, config.vocab_size, config.max_position_embeddings, "calibration sequence");
  Backend& backend = policy.context().backend();
  AttentionStatistics statistics(backend, config);
  const TokenBatch batch = rollout::sequence_batch(sequences, 0, sequences.count, true, rollout::LogitRows::none);
  KvCache cache(backend, policy.compiled(), model::kv_dim(config), static_cast<int64_t>(batch.size()));
  policy.runner().run(
      policy.compiled(), policy.attention_scales(), batch, cache, PassLimits{}, [](int64_t, int64_t, const float*) {},
      statistics.observer());
  return statistics.scales(options);
}

void recalibrate_attention_scales(Policy& policy, const rollout::TokenSequences& sequences,
                                  const CalibrationOptions& options) {
  policy.set_attention_scales(measure_attention_scales(policy, sequences, options));
}

}  // namespace fp8rl::policy
