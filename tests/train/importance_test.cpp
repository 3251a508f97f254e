// Importance weights w = exp(logp_old - logp_gen) (core/train/importance_weights.h)
// for known log-prob differences, in every mode, with their counts.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/train/importance_weights.h"
#include "kernels/error.h"
#include "train/train_test_support.h"

namespace fp8rl::test {

namespace {

using train::ImportanceMode;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// logp_old - logp_gen per sequence: [0.5, -0.25] [1.5, pad, 0.25] [-1.0, 0.5].
// Geometric means: e^0.125 = 1.133, e^0.875 = 2.399, e^-0.25 = 0.779.
OwnedBatch weights_batch() {
  OwnedBatch b;
  b.add({{0.0f, -1.0f, -1.5f, 0.0f, 0.0f}, {0.0f, -1.0f, -0.75f, 0.0f, 0.0f}});
  b.add({{0.0f, -0.5f, -2.0f, 0.0f, 0.0f}, {0.0f, kNaN, kNaN, 0.0f, 0.0f, 0}, {0.0f, -2.0f, -2.25f, 0.0f, 0.0f}});
  b.add({{0.0f, -3.0f, -2.0f, 0.0f, 0.0f}, {0.0f, -1.0f, -1.5f, 0.0f, 0.0f}});
  return b;
}

std::vector<double> weights_of(const OwnedBatch& b, train::ImportanceMode mode, train::ImportanceStats* stats) {
  train::ImportanceOptions options;
  options.mode = mode;
  options.low = 0.5;
  options.high = 2.0;
  std::vector<double> w(b.size(), -1.0);
  *stats = train::importance_weights(b.view(), options, w.data());
  return w;
}

void check_weights(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t t = 0; t < actual.size(); ++t) {
    INFO("token " << t);
    CHECK(actual[t] == doctest::Approx(expected[t]).epsilon(1e-15));
  }
}

}  // namespace

TEST_CASE("importance weights for known log-prob differences, every mode") {
  const OwnedBatch b = weights_batch();
  const double e05 = std::exp(0.5), em025 = std::exp(-0.25), e15 = std::exp(1.5), e025 = std::exp(0.25),
               em1 = std::exp(-1.0);
  train::ImportanceStats stats;
  SUBCASE("off: 1 on masked tokens") {
    check_weights(weights_of(b, ImportanceMode::off, &stats), {1, 1, 1, 0, 1, 1, 1});
    CHECK(stats.mean_weight() == 1.0);
  }
  SUBCASE("plain") {
    check_weights(weights_of(b, ImportanceMode::plain, &stats), {e05, em025, e15, 0, e025, em1, e05});
    CHECK(stats.tokens == 6);
    CHECK(stats.mean_weight() == doctest::Approx((e05 + em025 + e15 + e025 + em1 + e05) / 6.0));
  }
  SUBCASE("truncated to [0.5, 2]") {
    check_weights(weights_of(b, ImportanceMode::truncated, &stats), {e05, em025, 2.0, 0, e025, 0.5, e05});
    CHECK(stats.truncated == 2);
    CHECK(stats.fraction(stats.truncated) == doctest::Approx(2.0 / 6.0));
    CHECK(stats.masked == 0);
  }
  SUBCASE("token masked outside [0.5, 2]") {
    check_weights(weights_of(b, ImportanceMode::token_masked, &stats), {e05, em025, 0, 0, e025, 0, e05});
    CHECK(stats.masked == 2);
    CHECK(stats.truncated == 0);
  }
  SUBCASE("sequence masked: the geometric mean decides, then plain token weights") {
    // Sequence 1 (geometric mean 2.399) is zeroed although its token e^0.25
    // is inside; sequence 2 (0.779) keeps e^-1 although it is outside.
    check_weights(weights_of(b, ImportanceMode::sequence_masked, &stats), {e05, em025, 0, 0, 0, em1, e05});
    CHECK(stats.masked == 2);
    CHECK(stats.masked_sequences == 1);
    CHECK(stats.mean_weight() == doctest::Approx((e05 + em025 + em1 + e05) / 6.0));
  }
}

TEST_CASE("non-finite generator log-probs give weight 0, counted apart") {
  OwnedBatch b;
  b.add({{0.0f, -1.0f, -std::numeric_limits<float>::infinity(), 0.0f, 0.0f}, {0.0f, -1.0f, -1.0f, 0.0f, 0.0f}});
  b.add({{0.0f, -1.0f, kNaN, 0.0f, 0.0f}, {0.0f, -1.0f, -1.0f, 0.0f, 0.0f}});
  train::ImportanceStats stats;
  check_weights(weights_of(b, ImportanceMode::plain, &stats), {0, 1, 0, 1});
  CHECK(stats.non_finite == 2);
  CHECK(stats.masked == 0);
  // sequence_masked: the non-finite log-ratio makes the geometric mean
  // non-finite and rejects the whole sequence.
  check_weights(weights_of(b, ImportanceMode::sequence_masked, &stats), {0, 0, 0, 0});
  CHECK(stats.masked_sequences == 2);
  CHECK(stats.masked == 4);
}

TEST_CASE("identical log-probs give weight exactly 1 in every mode") {
  OwnedBatch b;
  b.add({{0.0f, -0.3f, -0.3f, 0.0f, 0.0f}, {0.0f, -7.1f, -7.1f, 0.0f, 0.0f}});
  for (const auto mode : {ImportanceMode::plain, ImportanceMode::truncated, ImportanceMode::token_masked,
                          ImportanceMode::sequence_masked}) {
    train::ImportanceStats stats;
    const std::vector<double> w = weights_of(b, mode, &stats);
    CHECK(w[0] == 1.0);
    CHECK(w[1] == 1.0);
    CHECK(stats.mean_weight() == 1.0);
  }
}

TEST_CASE("importance options errors") {
  const OwnedBatch b = weights_batch();
  train::ImportanceOptions options;
  options.mode = ImportanceMode::truncated;
  options.low = -0.1;
  CHECK_THROWS_AS(train::importance_weights(b.view(), options, nullptr), Error);
  options.low = 0.0;
  options.high = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(train::importance_weights(b.view(), options, nullptr), Error);
  options.high = 1.0;
  options.mode = static_cast<ImportanceMode>(9);
  CHECK_THROWS_WITH_AS(train::importance_weights(b.view(), options, nullptr), doctest::Contains("mode"), Error);
  options.mode = ImportanceMode::plain;
  train::TokenBatch view = b.view();
  view.logp_gen = nullptr;
  CHECK_THROWS_WITH_AS(train::importance_weights(view, options, nullptr), doctest::Contains("logp_gen is null"), Error);
}

}  // namespace fp8rl::test
