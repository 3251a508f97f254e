#include "seed_statistics.h"

#include <algorithm>
#include <cmath>

#include "rng.h"

namespace fp8rl_cli {
namespace {

constexpr uint64_t kBootstrapSeed = 0x5EED5;
constexpr int kMonteCarloSignFlips = 200000;
constexpr double kPowerZ = 1.959964 + 0.841621;  // z of the two-sided 5% level plus z of 80% power

// The nearest-rank quantile q in (0, 1] of sorted values.
double nearest_rank(const std::vector<double>& sorted, double q) {
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size()))) - 1;
  return sorted[index];
}

// Sums of |d| under sign patterns are compared with a relative tolerance, so
// that a pattern equal to the observed sum up to rounding counts as "as far".
bool at_least(double sum, double observed) { return sum >= observed * (1 - 1e-12) - 1e-15; }

double sign_flip_p_value(const std::vector<double>& differences) {
  double observed = 0;
  for (double d : differences) observed += d;
  observed = std::fabs(observed);
  const size_t n = differences.size();
  if (n <= static_cast<size_t>(kExactSignFlipSeeds)) {
    const uint64_t patterns = uint64_t{1} << n;
    uint64_t extreme = 0;
    for (uint64_t signs = 0; signs < patterns; ++signs) {
      double sum = 0;
      for (size_t i = 0; i < n; ++i) sum += (signs >> i & 1) ? -differences[i] : differences[i];
      if (at_least(std::fabs(sum), observed)) ++extreme;
    }
    return static_cast<double>(extreme) / static_cast<double>(patterns);
  }
  Rng rng(kBootstrapSeed, n, 1);
  int64_t extreme = 0;
  for (int draw = 0; draw < kMonteCarloSignFlips; ++draw) {
    double sum = 0;
    for (double d : differences) sum += (rng.next() & 1) ? -d : d;
    if (at_least(std::fabs(sum), observed)) ++extreme;
  }
  return static_cast<double>(extreme + 1) / static_cast<double>(kMonteCarloSignFlips + 1);
}

}  // namespace

double median_of(std::vector<double> values) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? NAN : sum / static_cast<double>(values.size());
}

double stddev_of(const std::vector<double>& values) {
  if (values.size() < 2) return NAN;
  const double m = mean_of(values);
  double sum = 0;
  for (double v : values) sum += (v - m) * (v - m);
  return std::sqrt(sum / static_cast<double>(values.size() - 1));
}

Interval bootstrap_median_interval(const std::vector<double>& values, double level, int resamples) {
  if (values.empty()) return {NAN, NAN};
  if (values.size() == 1) return {values[0], values[0]};
  Rng rng(kBootstrapSeed, values.size(), 0);
  std::vector<double> medians(static_cast<size_t>(resamples)), draw(values.size());
  for (double& m : medians) {
    for (double& x : draw) x = values[static_cast<size_t>(rng.below(static_cast<int64_t>(values.size())))];
    m = median_of(draw);
  }
  std::sort(medians.begin(), medians.end());
  return {nearest_rank(medians, (1 - level) / 2), nearest_rank(medians, (1 + level) / 2)};
}

bool took_off(double sft_end_accuracy, double final_accuracy, double gain) {
  return final_accuracy >= sft_end_accuracy + gain;
}

int64_t takeoff_step(const std::vector<std::pair<int64_t, double>>& curve, double gain) {
  double start = NAN;
  for (const auto& [step, accuracy] : curve) {
    if (step == 0) {
      start = accuracy;
    } else if (!std::isnan(start) && accuracy >= start + gain) {
      return step;
    }
  }
  return -1;
}

PairedComparison compare_paired(const std::vector<double>& a, const std::vector<double>& b, double level) {
  PairedComparison c;
  std::vector<double> differences;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double d = b[i] - a[i];
    differences.push_back(d);
    c.wins += d > 0 ? 1 : 0;
    c.losses += d < 0 ? 1 : 0;
  }
  c.seeds = static_cast<int>(differences.size());
  c.median_difference = median_of(differences);
  c.interval = bootstrap_median_interval(differences, level);
  c.p_value = differences.empty() ? 1.0 : sign_flip_p_value(differences);
  return c;
}

int seeds_needed_for(double alpha) {
  int n = 1;
  while (2.0 / std::ldexp(1.0, n) >= alpha) ++n;
  return n;
}

int64_t seeds_for_power(const std::vector<double>& differences) {
  const double mean = mean_of(differences), sd = stddev_of(differences);
  if (std::isnan(sd) || mean == 0) return -1;
  return static_cast<int64_t>(std::ceil(kPowerZ * kPowerZ * sd * sd / (mean * mean)));
}

}  // namespace fp8rl_cli
