#include "core/train/importance_weights.h"

#include <algorithm>
#include <cmath>

namespace fp8rl::train {

namespace {

// Computes the weights with the batch and options already validated.
ImportanceStats compute(const TokenBatch& batch, const ImportanceOptions& options, double* weights) {
  ImportanceStats stats;
  auto store = [&](int64_t t, double w) {
    if (weights != nullptr) weights[t] = w;
  };
  for (int64_t s = 0; s < batch.count; ++s) {
    const int64_t begin = batch.offsets[s], end = batch.offsets[s + 1];
    bool reject_sequence = false;
    if (options.mode == ImportanceMode::sequence_masked) {
      // The geometric mean of the sequence's token weights decides; a
      // non-finite log-ratio makes the mean non-finite and rejects it.
      double log_sum = 0.0;
      int64_t n = 0;
      for (int64_t t = begin; t < end; ++t) {
        if (!batch.counts(t)) continue;
        log_sum += static_cast<double>(batch.logp_old[t]) - static_cast<double>(batch.logp_gen[t]);
        ++n;
      }
      if (n > 0) {
        const double geometric_mean = std::exp(log_sum / static_cast<double>(n));
        reject_sequence =
            !std::isfinite(geometric_mean) || geometric_mean < options.low || geometric_mean > options.high;
        if (reject_sequence) ++stats.masked_sequences;
      }
    }
    for (int64_t t = begin; t < end; ++t) {
      if (!batch.counts(t)) {
        store(t, 0.0);
        continue;
      }
      ++stats.tokens;
      double w = 1.0;
      if (options.mode != ImportanceMode::off) {
        const double log_ratio = static_cast<double>(batch.logp_old[t]) - static_cast<double>(batch.logp_gen[t]);
        w = std::exp(log_ratio);
        if (reject_sequence) {
          w = 0.0;
          ++stats.masked;
        } else if (!std::isfinite(batch.logp_gen[t]) || !std::isfinite(w)) {
          w = 0.0;
          ++stats.non_finite;
        } else if (options.mode == ImportanceMode::truncated) {
          if (w < options.low || w > options.high) ++stats.truncated;
          w = std::clamp(w, options.low, options.high);
        } else if (options.mode == ImportanceMode::token_masked) {
          if (w < options.low || w > options.high) {
            w = 0.0;
            ++stats.masked;
          }
        }
      }
      stats.weight_sum += w;
      store(t, w);
    }
  }
  return stats;
}

}  // namespace

ImportanceStats importance_weights(const TokenBatch& batch, const ImportanceOptions& options, double* weights) {
  validate_importance_options(options);
  BatchFields fields;
  fields.logp_old = options.mode != ImportanceMode::off;
  fields.logp_gen = options.mode != ImportanceMode::off;
  validate_token_batch(batch, fields, "importance weights");
  return compute(batch, options, weights);
}

}  // namespace fp8rl::train
