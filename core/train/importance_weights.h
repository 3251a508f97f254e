// Importance weights between the training policy before the step and the
// generator, w = exp(logp_old - logp_gen) per masked token, in the modes of
// ImportanceMode (loss_options.h). They correct the policy-gradient loss for
// the generator's numerics (FP8 rollout, stale weights) and are constants.
#pragma once

#include <cstdint>

#include "core/train/loss_options.h"

namespace fp8rl::train {

// Counts over the masked tokens.
struct ImportanceStats {
  int64_t tokens = 0;            // masked tokens
  double weight_sum = 0.0;       // sum of the final weights (after truncation / masking)
  int64_t truncated = 0;         // truncated mode: tokens whose w was outside [low, high] and clamped
  int64_t masked = 0;            // token_masked / sequence_masked: tokens zeroed by the masking rule
  int64_t masked_sequences = 0;  // sequence_masked: sequences zeroed (with >= 1 masked token)
  int64_t non_finite = 0;        // tokens zeroed because logp_gen or w was not finite (not also in `masked`)

  double mean_weight() const { return tokens > 0 ? weight_sum / static_cast<double>(tokens) : 0.0; }
  double fraction(int64_t n) const { return tokens > 0 ? static_cast<double>(n) / static_cast<double>(tokens) : 0.0; }
};

// Writes weights[t] for every token of the batch (0 for unmasked tokens; 1
// for masked tokens when the mode is off). Reads offsets, mask and, unless
// the mode is off, logp_old and logp_gen; validates them (validate_token_batch) and the
// options. weights: [batch.total_tokens()], caller-owned, may be null when
// only the statistics are wanted.
ImportanceStats importance_weights(const TokenBatch& batch, const ImportanceOptions& options, double* weights);

}  // namespace fp8rl::train
