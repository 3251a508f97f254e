// The inputs and options of the RL token losses (token_losses.h), the
// importance weights (importance_weights.h) and the mismatch metrics
// (mismatch_metrics.h).
//
// A batch is a set of completions in flat per-token arrays: sequence s owns
// tokens [offsets[s], offsets[s + 1]). Only tokens with mask 1 take part in a
// loss or a statistic; the others get gradient 0 and are never read beyond
// their mask, so padding may hold anything (NaN included).
#pragma once

#include <cstdint>

namespace fp8rl::train {

// A borrowed view; every per-token array has offsets[count] entries.
struct TokenBatch {
  const int64_t* offsets = nullptr;   // [count + 1], offsets[0] == 0, non-decreasing (empty sequences allowed)
  int64_t count = 0;                  // sequences, >= 1
  const float* logp = nullptr;        // [tokens] current policy: the quantity being differentiated
  const float* logp_old = nullptr;    // [tokens] training policy before the step (recomputed), constant
  const float* logp_gen = nullptr;    // [tokens] generator's log-probs; read only when importance weighting is on
  const float* logp_ref = nullptr;    // [tokens] frozen reference; optional (KL penalty and KL statistics)
  const float* advantages = nullptr;  // [tokens] per token (advantages.h broadcasts per-sequence values)
  const uint8_t* mask = nullptr;      // [tokens] 0 or 1; null: every token counts

  int64_t total_tokens() const { return offsets[count]; }
  bool counts(int64_t t) const { return mask == nullptr || mask[t] != 0; }
};

// Token-level importance-sampling correction between the training policy
// before the step and the generator: w = exp(logp_old - logp_gen), a constant
// (no gradient). A non-finite logp_gen or w gives w = 0 (counted as
// non-finite), in every mode but off.
enum class ImportanceMode : int32_t {
  off = 0,           // w = 1; logp_gen is not read
  plain = 1,         // w
  truncated = 2,     // clamp(w, low, high)  (TIS; low = 0 truncates from above only)
  token_masked = 3,  // w where low <= w <= high, else 0  (ICE-POP)
  // The whole sequence gets w = 0 when the geometric mean of its token
  // weights, exp(mean over its masked tokens of (logp_old - logp_gen)), is
  // outside [low, high] (or not finite); otherwise each token keeps its plain,
  // untruncated w (as NeMo-RL's "seq-mask-tis").
  sequence_masked = 4,
};

struct ImportanceOptions {
  ImportanceMode mode = ImportanceMode::off;
  double low = 0.0;   // >= 0
  double high = 2.0;  // > 0, >= low; the truncation cap C in truncated mode
};

enum class LossKind : int32_t {
  // Per token: -w * min(r A, clip(r, 1 - clip_low, 1 + clip_high) A) + w * kl_coefficient * k,
  // r = exp(logp - logp_old), k the KL estimator of logp against logp_ref.
  clipped_policy_gradient = 0,
  // Per token: -logp (SFT). Reads only offsets, logp and mask.
  cross_entropy = 1,
};

// Estimators of KL(policy || reference) from a token drawn from the policy,
// x = logp_ref - logp: k1 = -x, k3 = exp(x) - x - 1 (Schulman's k3, >= 0).
enum class KlEstimator : int32_t { k1 = 1, k3 = 3 };

enum class Aggregation : int32_t {
  token_mean = 0,     // sum of masked token losses / number of masked tokens
  sequence_mean = 1,  // mean over sequences with >= 1 masked token of their token means
};

struct LossOptions {
  LossKind kind = LossKind::clipped_policy_gradient;
  double clip_low = 0.2;   // epsilon_low in [0, 1]
  double clip_high = 0.2;  // epsilon_high >= 0 (DAPO's clip-higher uses e.g. 0.28)
  ImportanceOptions importance;
  double kl_coefficient = 0.0;  // beta >= 0; > 0 requires logp_ref
  KlEstimator kl_estimator = KlEstimator::k3;
  Aggregation aggregation = Aggregation::token_mean;
};

// Throw fp8rl::Error(invalid_argument) naming the field.
void validate_importance_options(const ImportanceOptions& options);
void validate_loss_options(const LossOptions& options);

// Which per-token arrays a computation reads; each must be non-null and, on
// masked tokens, finite (logp_gen excepted: see ImportanceMode).
struct BatchFields {
  bool logp = false;
  bool logp_old = false;
  bool logp_gen = false;
  bool logp_ref = false;
  bool advantages = false;
};

// Throws invalid_argument for a malformed batch (null arrays, count < 1,
// offsets[0] != 0 or decreasing, mask values other than 0/1) and non_finite
// naming the array, token index, sequence and position of the first NaN/inf
// on a masked token. `what` prefixes the messages.
void validate_token_batch(const TokenBatch& batch, const BatchFields& fields, const char* what);

}  // namespace fp8rl::train
