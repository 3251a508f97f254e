#include "core/train/rank_metrics.h"

#include <vector>

#include "core/train/step_metrics.h"

namespace fp8rl::train {
namespace {

// The fields as doubles, in one fixed order (counts stay exact below 2^53).
std::vector<double> fields(const LossStats& s) {
  return {static_cast<double>(s.tokens), static_cast<double>(s.sequences), s.clip_fraction, s.ratio_mean,
          s.ratio_min, s.ratio_max, s.old_kl_k3_mean, s.is_weight_mean, s.is_truncated_fraction,
          s.is_masked_fraction, s.is_non_finite_fraction, static_cast<double>(s.is_masked_sequences),
          s.kl_k1_mean, s.kl_k3_mean};
}

LossStats loss_stats(const double* f) {
  LossStats s;
  s.tokens = static_cast<int64_t>(f[0]);
  s.sequences = static_cast<int64_t>(f[1]);
  s.clip_fraction = f[2];
  s.ratio_mean = f[3];
  s.ratio_min = f[4];
  s.ratio_max = f[5];
  s.old_kl_k3_mean = f[6];
  s.is_weight_mean = f[7];
  s.is_truncated_fraction = f[8];
  s.is_masked_fraction = f[9];
  s.is_non_finite_fraction = f[10];
  s.is_masked_sequences = static_cast<int64_t>(f[11]);
  s.kl_k1_mean = f[12];
  s.kl_k3_mean = f[13];
  return s;
}

}  // namespace

LossStats merge_over_ranks(dist::Collectives& collectives, const LossStats& mine) {
  if (!collectives.distributed()) return mine;
  const std::vector<double> mine_fields = fields(mine);
  const std::vector<double> all = collectives.gather_host(mine_fields);
  LossStats total;
  for (size_t r = 0; r < static_cast<size_t>(collectives.size()); ++r)
    merge_loss_stats(total, loss_stats(all.data() + r * mine_fields.size()));
  return total;
}

MismatchMetrics merge_over_ranks(dist::Collectives& collectives, const MismatchMetrics& mine) {
  if (!collectives.distributed()) return mine;
  const std::vector<double> all = collectives.gather_host(
      {static_cast<double>(mine.tokens), static_cast<double>(mine.non_finite_tokens), mine.token_mult_prob_error,
       mine.gen_kl_error, mine.gen_kl_k1, mine.policy_kl_error, mine.is_weight_mean, mine.is_truncated_fraction,
       mine.is_masked_fraction, static_cast<double>(mine.is_masked_sequences)});
  constexpr size_t kFields = 10;
  // The finite-token means are weighted by finite tokens, the importance
  // fields by all tokens, as mismatch_metrics defines them.
  double tokens = 0, finite = 0, non_finite = 0, masked_sequences = 0;
  std::vector<double> finite_sums(4, 0.0), token_sums(3, 0.0);
  for (size_t r = 0; r < static_cast<size_t>(collectives.size()); ++r) {
    const double* f = all.data() + r * kFields;
    const double rank_finite = f[0] - f[1];
    tokens += f[0];
    non_finite += f[1];
    finite += rank_finite;
    for (size_t i = 0; i < 4; ++i) finite_sums[i] += f[2 + i] * rank_finite;
    for (size_t i = 0; i < 3; ++i) token_sums[i] += f[6 + i] * f[0];
    masked_sequences += f[9];
  }
  MismatchMetrics total;
  total.tokens = static_cast<int64_t>(tokens);
  total.non_finite_tokens = static_cast<int64_t>(non_finite);
  total.is_masked_sequences = static_cast<int64_t>(masked_sequences);
  if (finite > 0) {
    total.token_mult_prob_error = finite_sums[0] / finite;
    total.gen_kl_error = finite_sums[1] / finite;
    total.gen_kl_k1 = finite_sums[2] / finite;
    total.policy_kl_error = finite_sums[3] / finite;
  }
  if (tokens > 0) {
    total.is_weight_mean = token_sums[0] / tokens;
    total.is_truncated_fraction = token_sums[1] / tokens;
    total.is_masked_fraction = token_sums[2] / tokens;
  }
  return total;
}

}  // namespace fp8rl::train
