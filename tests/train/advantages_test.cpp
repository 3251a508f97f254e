// Group advantages (core/train/advantages.h) against hand-computed values.
#include "core/train/advantages.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/error.h"

namespace fp8rl::test {

namespace {

using train::AdvantageBaseline;
using train::AdvantageOptions;

std::vector<float> advantages_of(const std::vector<float>& rewards, const AdvantageOptions& options) {
  std::vector<float> out(rewards.size(), -99.0f);
  train::group_advantages(rewards.data(), static_cast<int64_t>(rewards.size()), options, out.data());
  return out;
}

void check_values(const std::vector<float>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("sequence " << i);
    CHECK(static_cast<double>(actual[i]) == doctest::Approx(expected[i]).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("group-mean baseline, with and without std normalization") {
  const std::vector<float> rewards = {1.0f, 0.0f, 2.0f, 5.0f, 5.0f, 5.0f};
  AdvantageOptions options;
  options.group_size = 3;
  check_values(advantages_of(rewards, options), {0, -1, 1, 0, 0, 0});
  options.normalize_by_std = true;  // sample std of {1, 0, 2}: sqrt(2 / 2) = 1
  check_values(advantages_of(rewards, options), {0, -1 / (1 + 1e-6), 1 / (1 + 1e-6), 0, 0, 0});
  options.sample_std = false;  // population std: sqrt(2 / 3)
  const double std_dev = std::sqrt(2.0 / 3.0);
  check_values(advantages_of(rewards, options), {0, -1 / (std_dev + 1e-6), 1 / (std_dev + 1e-6), 0, 0, 0});
}

TEST_CASE("a group with all-equal rewards gets exactly zero advantages, no NaN, even with epsilon 0") {
  const std::vector<float> rewards = {0.1f, 0.1f, 0.1f, 0.7f, 0.7f, 0.7f};
  for (const auto baseline : {AdvantageBaseline::group_mean, AdvantageBaseline::leave_one_out}) {
    for (const bool normalize : {false, true}) {
      AdvantageOptions options;
      options.group_size = 3;
      options.baseline = baseline;
      options.normalize_by_std = normalize;
      options.epsilon = 0.0;
      for (const float a : advantages_of(rewards, options)) CHECK(a == 0.0f);
    }
  }
}

TEST_CASE("leave-one-out baseline: r_i minus the mean of the others") {
  AdvantageOptions options;
  options.group_size = 3;
  options.baseline = AdvantageBaseline::leave_one_out;
  // {1, 0, 2}: baselines (0 + 2) / 2 = 1, (1 + 2) / 2 = 1.5, (1 + 0) / 2 = 0.5
  check_values(advantages_of({1.0f, 0.0f, 2.0f}, options), {0.0, -1.5, 1.5});
  options.group_size = 2;
  check_values(advantages_of({3.0f, 1.0f, -1.0f, 0.5f}, options), {2.0, -2.0, -1.5, 1.5});
}

TEST_CASE("group size 1: zero advantages, in place, broadcast to tokens") {
  AdvantageOptions options;
  options.normalize_by_std = true;
  check_values(advantages_of({3.0f, -2.0f}, options), {0.0, 0.0});

  std::vector<float> values = {4.0f, 2.0f, 0.0f, 2.0f};
  options = AdvantageOptions();
  options.group_size = 4;
  train::group_advantages(values.data(), 4, options, values.data());  // aliasing allowed
  check_values(values, {2.0, 0.0, -2.0, 0.0});

  const std::vector<int64_t> offsets = {0, 2, 2, 5};
  const std::vector<float> per_sequence = {1.5f, 9.0f, -0.5f};
  std::vector<float> per_token(5, 0.0f);
  train::broadcast_to_tokens(per_sequence.data(), offsets.data(), 3, per_token.data());
  CHECK(per_token == std::vector<float>{1.5f, 1.5f, -0.5f, -0.5f, -0.5f});
}

TEST_CASE("advantage errors") {
  const std::vector<float> rewards = {1.0f, 2.0f, 3.0f};
  std::vector<float> out(3);
  AdvantageOptions options;
  options.group_size = 0;
  CHECK_THROWS_AS(train::group_advantages(rewards.data(), 3, options, out.data()), Error);
  options.group_size = 2;
  CHECK_THROWS_WITH_AS(train::group_advantages(rewards.data(), 3, options, out.data()),
                       doctest::Contains("multiple of group_size"), Error);
  options.group_size = 1;
  options.baseline = AdvantageBaseline::leave_one_out;
  CHECK_THROWS_WITH_AS(train::group_advantages(rewards.data(), 3, options, out.data()),
                       doctest::Contains("group_size >= 2"), Error);
  options = AdvantageOptions();
  options.epsilon = -1.0;
  CHECK_THROWS_AS(train::group_advantages(rewards.data(), 3, options, out.data()), Error);
  options = AdvantageOptions();
  const std::vector<float> bad = {1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  try {
    train::group_advantages(bad.data(), 3, options, out.data());
    FAIL("expected an error");
  } catch (const Error& error) {
    CHECK(error.status() == Status::non_finite);
    CHECK(std::string(error.what()).find("rewards[1]") != std::string::npos);
  }
  const std::vector<int64_t> offsets = {1, 2};
  CHECK_THROWS_AS(train::broadcast_to_tokens(rewards.data(), offsets.data(), 1, out.data()), Error);
}

}  // namespace fp8rl::test
