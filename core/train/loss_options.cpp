#include "core/train/loss_options.h"

#include <cmath>
#include <string>

#include "kernels/error.h"

namespace fp8rl::train {

namespace {

std::string number(double value) { return std::to_string(value); }

void check_finite(const float* values, const char* name, const TokenBatch& batch, const char* what) {
  for (int64_t s = 0; s < batch.count; ++s) {
    for (int64_t t = batch.offsets[s]; t < batch.offsets[s + 1]; ++t) {
      if (!batch.counts(t) || std::isfinite(values[t])) continue;
      fail(Status::non_finite, std::string(what) + ": " + name + "[" + std::to_string(t) + "] (sequence " +
                                   std::to_string(s) + ", position " + std::to_string(t - batch.offsets[s]) + ") is " +
                                   (std::isnan(values[t]) ? "NaN" : "infinite") + " on a masked token");
    }
  }
}

}  // namespace

void validate_importance_options(const ImportanceOptions& options) {
  const auto mode = static_cast<int32_t>(options.mode);
  require(
      mode >= 0 && mode <= 4,
      "importance: mode must be off, plain, truncated, token_masked or sequence_masked, got " + std::to_string(mode));
  require(std::isfinite(options.low) && options.low >= 0.0,
          "importance: low must be finite and >= 0, got " + number(options.low));
  require(std::isfinite(options.high) && options.high > 0.0,
          "importance: high (the cap C when truncating) must be finite and > 0, got " + number(options.high));
  require(options.low <= options.high,
          "importance: low must be <= high, got low " + number(options.low) + " > high " + number(options.high));
}

void validate_loss_options(const LossOptions& options) {
  const auto kind = static_cast<int32_t>(options.kind);
  require(kind == 0 || kind == 1,
          "loss: kind must be clipped_policy_gradient or cross_entropy, got " + std::to_string(kind));
  require(std::isfinite(options.clip_low) && options.clip_low >= 0.0 && options.clip_low <= 1.0,
          "loss: clip_low (epsilon_low) must be in [0, 1], got " + number(options.clip_low));
  require(std::isfinite(options.clip_high) && options.clip_high >= 0.0,
          "loss: clip_high (epsilon_high) must be finite and >= 0, got " + number(options.clip_high));
  require(std::isfinite(options.kl_coefficient) && options.kl_coefficient >= 0.0,
          "loss: kl_coefficient must be finite and >= 0, got " + number(options.kl_coefficient));
  const auto estimator = static_cast<int32_t>(options.kl_estimator);
  require(estimator == 1 || estimator == 3, "loss: kl_estimator must be k1 or k3, got " + std::to_string(estimator));
  const auto aggregation = static_cast<int32_t>(options.aggregation);
  require(aggregation == 0 || aggregation == 1,
          "loss: aggregation must be token_mean or sequence_mean, got " + std::to_string(aggregation));
  validate_importance_options(options.importance);
}

void validate_token_batch(const TokenBatch& batch, const BatchFields& fields, const char* what) {
  const std::string prefix(what);
  require(batch.count >= 1,
          prefix + ": the batch needs at least one sequence, got count " + std::to_string(batch.count));
  require(batch.offsets != nullptr, prefix + ": offsets is null");
  require(batch.offsets[0] == 0, prefix + ": offsets[0] must be 0, got " + std::to_string(batch.offsets[0]));
  for (int64_t s = 0; s < batch.count; ++s) {
    require(batch.offsets[s + 1] >= batch.offsets[s],
            prefix + ": offsets must be non-decreasing, but offsets[" + std::to_string(s + 1) +
                "] = " + std::to_string(batch.offsets[s + 1]) + " < offsets[" + std::to_string(s) +
                "] = " + std::to_string(batch.offsets[s]));
  }
  const struct {
    bool needed;
    bool must_be_finite;  // logp_gen may be non-finite: such a token's importance weight is 0
    const float* values;
    const char* name;
  } arrays[] = {{fields.logp, true, batch.logp, "logp"},
                {fields.logp_old, true, batch.logp_old, "logp_old"},
                {fields.logp_gen, false, batch.logp_gen, "logp_gen"},
                {fields.logp_ref, true, batch.logp_ref, "logp_ref"},
                {fields.advantages, true, batch.advantages, "advantages"}};
  for (const auto& array : arrays) {
    require(!array.needed || array.values != nullptr, prefix + ": " + array.name + " is null but needed");
  }
  if (batch.mask != nullptr) {
    for (int64_t t = 0; t < batch.total_tokens(); ++t) {
      require(batch.mask[t] <= 1, prefix + ": mask[" + std::to_string(t) + "] must be 0 or 1, got " +
                                      std::to_string(static_cast<int>(batch.mask[t])));
    }
  }
  for (const auto& array : arrays) {
    if (array.needed && array.must_be_finite) check_finite(array.values, array.name, batch, what);
  }
}

}  // namespace fp8rl::train
