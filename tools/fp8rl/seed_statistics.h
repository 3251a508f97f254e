// Statistics over seeds for `fp8rl compare`: a run's result is one number per
// seed (final or best validation accuracy), and RL take-offs are random enough
// that a mean ± std of three seeds says nothing. So: medians with percentile
// bootstrap intervals, a defined take-off, and paired comparisons (the same
// seed under two recipes shares its initial weights and prompts) with an
// exact sign-flip test. Everything is deterministic: the bootstrap draws from
// a fixed-seed generator, so a report rebuilt from the same summaries prints
// the same intervals.
#ifndef FP8RL_TOOLS_SEED_STATISTICS_H
#define FP8RL_TOOLS_SEED_STATISTICS_H

#include <cstdint>
#include <utility>
#include <vector>

namespace fp8rl_cli {

// The median: the middle value, or the mean of the two middle values of an
// even count. NaN for no values.
double median_of(std::vector<double> values);

// The mean, and the sample standard deviation (n - 1 in the denominator).
// NaN for no values, and the deviation NaN for fewer than two.
double mean_of(const std::vector<double>& values);
double stddev_of(const std::vector<double>& values);

struct Interval {
  double low = 0, high = 0;
};

// The percentile bootstrap interval of the median at `level` (e.g. 0.95):
// `resamples` resamples of values.size() draws with replacement, the median
// of each, and their (1 - level) / 2 and (1 + level) / 2 quantiles (nearest
// rank). With one value it is that value; NaN for none.
constexpr int kBootstrapResamples = 10000;
Interval bootstrap_median_interval(const std::vector<double>& values, double level = 0.95,
                                   int resamples = kBootstrapResamples);

// A seed takes off when its final validation accuracy is at least `gain`
// above its accuracy at the end of SFT: GRPO then learned something, rather
// than drifting around its starting point.
constexpr double kDefaultTakeoffGain = 0.15;
bool took_off(double sft_end_accuracy, double final_accuracy, double gain);

// The first GRPO step whose validation accuracy is at least `gain` above the
// SFT end (curve: (step, accuracy), step 0 = the SFT end), or -1 when none is.
int64_t takeoff_step(const std::vector<std::pair<int64_t, double>>& curve, double gain);

// A paired comparison of run B against run A over the seeds both ran:
// differences d_i = b_i - a_i, their median with its bootstrap interval, how
// many seeds B won and lost, and the two-sided p-value of the exact sign-flip
// (permutation) test of the mean difference: the share of the 2^n sign
// patterns of |d_i| whose mean is at least as far from 0 as the observed one.
// Under "the recipe makes no difference", each seed's difference is as likely
// to have either sign. With n seeds the smallest possible p is 2 / 2^n, so
// n seeds can never separate two recipes at p < 2 / 2^n. Exact up to
// kExactSignFlipSeeds seeds; above, a fixed-seed Monte Carlo estimate.
constexpr int kExactSignFlipSeeds = 20;
struct PairedComparison {
  int seeds = 0;
  double median_difference = 0;
  Interval interval;
  int wins = 0, losses = 0;  // ties are the rest
  double p_value = 1;
};
PairedComparison compare_paired(const std::vector<double>& a, const std::vector<double>& b, double level = 0.95);

// The smallest seed count at which the sign-flip test can reach p < alpha
// (2 / 2^n < alpha), whatever the differences.
int seeds_needed_for(double alpha);

// The paired seeds needed to detect the mean of `differences` (one per seed)
// with 80% power at the two-sided 5% level, by the normal approximation
// n = (z_0.975 + z_0.8)^2 sd^2 / mean^2 with the sample sd; -1 when that is
// undefined (fewer than two differences, or a mean of 0).
int64_t seeds_for_power(const std::vector<double>& differences);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_SEED_STATISTICS_H
