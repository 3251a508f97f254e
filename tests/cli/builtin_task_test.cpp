// The built-in tasks' problems and rewards, and the statistics over seeds
// that `fp8rl compare` reports, against values worked out by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tools/fp8rl/reward.h"
#include "tools/fp8rl/rng.h"
#include "tools/fp8rl/seed_statistics.h"
#include "tools/fp8rl/tasks.h"

using namespace fp8rl_cli;

TEST_CASE("reverse draws every length from min_length to length, and the answer reverses the prompt") {
  const auto task = make_reverse_task(24, 48, 5);
  CHECK(task->max_prompt_chars() == 49);  // 48 letters and '|'
  CHECK(task->max_answer_chars() == 48);
  Rng rng(7);
  std::vector<int> seen(49, 0);
  for (int i = 0; i < 5000; ++i) {
    const Problem p = task->sample(rng);
    REQUIRE(p.prompt.back() == '|');
    const std::string text = p.prompt.substr(0, p.prompt.size() - 1);
    REQUIRE(std::string(text.rbegin(), text.rend()) == p.answer);
    REQUIRE(text.size() >= 24);
    REQUIRE(text.size() <= 48);
    REQUIRE(std::all_of(text.begin(), text.end(), [](char c) { return c >= 'a' && c <= 'e'; }));
    ++seen[text.size()];
  }
  // 25 lengths, 200 draws each on average: every one appears.
  for (size_t n = 24; n <= 48; ++n) CHECK(seen[n] > 100);
}

TEST_CASE("the positional reward is the share of positions in place, 1 only for the exact answer") {
  const std::vector<int32_t> answer{5, 6, 7, 2};  // three characters and EOS (2)
  CHECK(positional_match_reward(answer, answer) == 1.0f);
  CHECK(exact_match_reward(answer, answer) == 1.0f);
  CHECK(positional_match_reward({5, 9, 7, 2}, answer) == 0.75f);  // one wrong character
  CHECK(exact_match_reward({5, 9, 7, 2}, answer) == 0.0f);
  CHECK(positional_match_reward({5, 6, 7, 8, 2}, answer) == 0.6f);  // 3 of 5: one token too many
  CHECK(positional_match_reward({5, 6}, answer) == 0.5f);           // cut short
  CHECK(positional_match_reward({}, answer) == 0.0f);
  CHECK(positional_match_reward({6, 7, 2}, answer) == 0.0f);  // shifted: nothing in place
}

TEST_CASE("median, bootstrap interval and take-off, worked out by hand") {
  CHECK(median_of({0.3, 0.1, 0.2}) == doctest::Approx(0.2));
  CHECK(median_of({0.4, 0.1, 0.2, 0.3}) == doctest::Approx(0.25));
  CHECK(std::isnan(median_of({})));
  CHECK(mean_of({0.1, 0.3}) == doctest::Approx(0.2));
  CHECK(stddev_of({1, 2, 3, 4}) == doctest::Approx(std::sqrt(5.0 / 3)));  // squares 2.25+0.25+0.25+2.25 over 3
  CHECK(std::isnan(mean_of({})));
  CHECK(std::isnan(stddev_of({0.5})));
  // Resampled medians of {a, b}: a or b with probability 1/4 each, (a+b)/2 with 1/2, so the 2.5% and
  // 97.5% quantiles are a and b. Of {a, b, c}: P(median = a) = P(at least two a's) = 7/27 > 2.5%.
  const Interval two = bootstrap_median_interval({0.25, 0.3});
  CHECK(two.low == 0.25);
  CHECK(two.high == 0.3);
  const Interval three = bootstrap_median_interval({0.5, 0.1, 0.3});
  CHECK(three.low == 0.1);
  CHECK(three.high == 0.5);
  // Eight equal values and one outlier: the outlier is the median of a resample only when it is drawn
  // at least five times in nine, P ~ 0.0006 < 2.5%, so it lies outside the interval.
  const Interval outlier = bootstrap_median_interval({0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.9});
  CHECK(outlier.low == 0.2);
  CHECK(outlier.high == 0.2);
  CHECK(took_off(0.1, 0.25, 0.15));
  CHECK_FALSE(took_off(0.1, 0.24, 0.15));
  CHECK(takeoff_step({{0, 0.1}, {25, 0.2}, {50, 0.3}, {75, 0.1}}, 0.15) == 50);
  CHECK(takeoff_step({{0, 0.1}, {25, 0.2}}, 0.15) == -1);
}

TEST_CASE("the paired sign-flip test enumerates the 2^n sign patterns") {
  // d = (0.1, 0.3): |+-0.1 +- 0.3| is 0.4 for 2 of the 4 patterns.
  const PairedComparison two = compare_paired({0.3, 0.25}, {0.4, 0.55});
  CHECK(two.seeds == 2);
  CHECK(two.median_difference == doctest::Approx(0.2));
  CHECK(two.wins == 2);
  CHECK(two.losses == 0);
  CHECK(two.p_value == 0.5);
  // Eight seeds, all won: only the all-plus and all-minus patterns are as extreme, p = 2/256.
  const std::vector<double> a(8, 0.2), b{0.3, 0.4, 0.25, 0.5, 0.35, 0.3, 0.45, 0.6};
  CHECK(compare_paired(a, b).p_value == doctest::Approx(2.0 / 256));
  // d = (0.1, -0.1, 0.2, 0.0): sum 0.2; of the 8 patterns of (0.1, 0.1, 0.2) (the zero flips nothing, so
  // 16 in all), |sum| >= 0.2 holds for sums +-0.4 and +-0.2: 12 of 16.
  const PairedComparison mixed = compare_paired({0.5, 0.5, 0.5, 0.5}, {0.6, 0.4, 0.7, 0.5});
  CHECK(mixed.wins == 2);
  CHECK(mixed.losses == 1);
  CHECK(mixed.p_value == doctest::Approx(12.0 / 16));
  CHECK(seeds_needed_for(0.05) == 6);  // 2/2^5 = 0.0625, 2/2^6 = 0.031
  CHECK(seeds_needed_for(0.01) == 8);  // 2/2^7 = 0.0156, 2/2^8 = 0.0078
  // d = (0.1, 0.3): mean 0.2, sample variance 0.02; (1.96 + 0.8416)^2 * 0.02 / 0.04 = 3.92, so 4 seeds.
  CHECK(seeds_for_power({0.1, 0.3}) == 4);
  CHECK(seeds_for_power({0.1}) == -1);        // no spread to measure
  CHECK(seeds_for_power({0.1, -0.1}) == -1);  // no effect to detect
}
