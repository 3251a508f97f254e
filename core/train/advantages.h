// Advantages from scalar rewards, GRPO style: sequences come in groups of G
// consecutive completions of one prompt, and each reward is compared with a
// baseline from its group.
//
//   group_mean:     A_i = r_i - mean(group)
//   leave_one_out:  A_i = r_i - mean(group without i)   (RLOO; needs G >= 2)
//   normalize_by_std: A_i /= (std(group) + epsilon), std over all G rewards,
//   population (divide by G) or sample (divide by G - 1, as torch.std and
//   NeMo-RL/TRL's GRPO; defined as 0 when G = 1).
//
// A group whose rewards are all equal gets A = 0 exactly (no NaN): the
// means are computed around the group's first reward, so equal rewards give
// zero deviations.
#pragma once

#include <cstdint>

namespace fp8rl::train {

enum class AdvantageBaseline : int32_t { group_mean = 0, leave_one_out = 1 };

struct AdvantageOptions {
  int64_t group_size = 1;  // G >= 1, divides the number of sequences
  AdvantageBaseline baseline = AdvantageBaseline::group_mean;
  bool normalize_by_std = false;
  bool sample_std = true;  // false: population std
  double epsilon = 1e-6;   // >= 0, finite
};

// advantages[i] for each of num_sequences rewards. rewards: [num_sequences],
// advantages: [num_sequences], both caller-owned (they may alias). Throws
// invalid_argument for bad options or sizes and non_finite naming the first
// NaN/inf reward.
void group_advantages(const float* rewards, int64_t num_sequences, const AdvantageOptions& options, float* advantages);

// Broadcasts per-sequence values to their tokens: per_token[t] = per_sequence[s]
// for t in [offsets[s], offsets[s + 1]). per_token: [offsets[count]],
// caller-owned. Throws invalid_argument for malformed offsets and non_finite
// for a NaN/inf value.
void broadcast_to_tokens(const float* per_sequence, const int64_t* offsets, int64_t count, float* per_token);

}  // namespace fp8rl::train
