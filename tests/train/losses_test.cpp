// The clipped policy-gradient and cross-entropy losses (core/train/token_losses.h)
// against hand-computed cases written from the formulas in double, and their
// gradients against central finite differences in double.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/train/token_losses.h"
#include "kernels/error.h"
#include "train/train_test_support.h"

namespace fp8rl::test {

namespace {

using train::Aggregation;
using train::ImportanceMode;
using train::KlEstimator;
using train::LossKind;
using train::LossOptions;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Two sequences; the last token of the second is padding (mask 0, NaN).
// logp_old - logp_gen = [0.5, -0.25 | 1.0, -1.0, 0.125].
OwnedBatch basic_batch() {
  OwnedBatch b;
  b.add({{-1.0f, -1.25f, -1.75f, 0.0f, 1.0f}, {-2.0f, -1.5f, -1.25f, 0.0f, 1.0f}});
  b.add({{-0.5f, -0.5f, -1.5f, 0.0f, -2.0f},
         {-1.0f, -0.75f, 0.25f, 0.0f, -2.0f},
         {-3.0f, -3.5f, -3.625f, 0.0f, -1.0f},
         {kNaN, kNaN, kNaN, kNaN, kNaN, 0}});
  return b;
}

// Per-token loss and gradient of basic_batch with epsilon 0.2, unweighted:
//   t0: r = e^0.25 = 1.284 > 1.2, A > 0: clipped, l = -1.2, dl = 0
//   t1: r = e^-0.5 = 0.607, A > 0: min(0.607, 0.8) unclipped, l = -r, dl = -r
//   t2: r = 1, A = -2: l = 2, dl = -rA = 2
//   t3: r = e^-0.25 = 0.779 < 0.8, A < 0: min(-1.558, -1.6) clipped, l = 1.6, dl = 0
//   t4: r = e^0.5 = 1.649, A = -1: min(-1.649, -1.2) unclipped, l = 1.649, dl = 1.649
const std::vector<double> kTokenLoss = {-1.2, -std::exp(-0.5), 2.0, 1.6, std::exp(0.5)};
const std::vector<double> kTokenGrad = {0.0, -std::exp(-0.5), 2.0, 0.0, std::exp(0.5)};

void check_weighted(const LossOptions& options, const std::vector<double>& w) {
  const OwnedBatch b = basic_batch();
  std::vector<float> grad(b.size(), -7.0f);
  const train::LossResult result = train::evaluate_loss(b.view(false), options, grad.data());
  double expected = 0.0;
  for (size_t t = 0; t < 5; ++t) expected += w[t] * kTokenLoss[t] / 5.0;
  CHECK(result.loss == doctest::Approx(expected).epsilon(1e-12));
  for (size_t t = 0; t < 5; ++t) CHECK(grad[t] == doctest::Approx(w[t] * kTokenGrad[t] / 5.0).epsilon(1e-6));
  CHECK(grad[5] == 0.0f);
  double w_mean = 0.0;
  for (double x : w) w_mean += x / 5.0;
  CHECK(result.stats.is_weight_mean == doctest::Approx(w_mean).epsilon(1e-12));
}

// A deterministic batch of dyadic values (multiples of 1/16, |x| < 8), so
// that logp +- 2^-12 is exact in float and the ratio stays off the clip kinks.
OwnedBatch random_batch(uint32_t seed) {
  uint32_t state = seed;
  auto next = [&](int n) {
    state = state * 1664525u + 1013904223u;
    return static_cast<int>((state >> 8) % static_cast<uint32_t>(n));
  };
  const float advantages[] = {-1.5f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f};
  OwnedBatch b;
  for (int s = 0; s < 4; ++s) {
    std::vector<TokenRow> rows;
    const int length = 1 + next(5);
    for (int i = 0; i < length; ++i) {
      TokenRow row{};
      row.logp = -static_cast<float>(1 + next(48)) / 16.0f;
      row.logp_old = row.logp + static_cast<float>(next(13) - 6) / 16.0f;
      row.logp_gen = row.logp_old + static_cast<float>(next(17) - 8) / 16.0f;
      row.logp_ref = row.logp + static_cast<float>(next(17) - 8) / 16.0f;
      row.advantage = advantages[next(6)];
      row.mask = next(5) == 0 ? 0 : 1;
      rows.push_back(row);
    }
    b.add(rows);
  }
  return b;
}

// dL/dlogp from evaluate_loss against (L(logp + h) - L(logp - h)) / 2h.
void check_gradient(const LossOptions& options, uint32_t seed) {
  OwnedBatch b = random_batch(seed);
  std::vector<float> grad(b.size());
  train::evaluate_loss(b.view(), options, grad.data());
  const float h = 1.0f / 4096.0f;
  for (size_t t = 0; t < b.size(); ++t) {
    const float saved = b.logp[t];
    b.logp[t] = saved + h;
    const double plus = train::evaluate_loss(b.view(), options, nullptr).loss;
    b.logp[t] = saved - h;
    const double minus = train::evaluate_loss(b.view(), options, nullptr).loss;
    b.logp[t] = saved;
    const double numeric = (plus - minus) / (2.0 * static_cast<double>(h));
    INFO("token " << t << " seed " << seed);
    CHECK(static_cast<double>(grad[t]) == doctest::Approx(numeric).epsilon(1e-5).scale(1e-3));
  }
}

}  // namespace

TEST_CASE("clipped policy gradient, token mean: hand-computed loss, gradient and statistics") {
  const OwnedBatch b = basic_batch();
  std::vector<float> grad(b.size(), -7.0f);
  const train::LossResult result = train::evaluate_loss(b.view(false), LossOptions(), grad.data());
  CHECK(result.loss == doctest::Approx((-1.2 - std::exp(-0.5) + 2.0 + 1.6 + std::exp(0.5)) / 5.0).epsilon(1e-12));
  const double expected_grad[] = {0.0, -std::exp(-0.5) / 5.0, 2.0 / 5.0, 0.0, std::exp(0.5) / 5.0, 0.0};
  for (size_t t = 0; t < 6; ++t) CHECK(grad[t] == doctest::Approx(expected_grad[t]).epsilon(1e-6));
  CHECK(result.stats.tokens == 5);
  CHECK(result.stats.sequences == 2);
  CHECK(result.stats.clip_fraction == doctest::Approx(2.0 / 5.0));
  CHECK(result.stats.ratio_mean ==
        doctest::Approx((std::exp(0.25) + std::exp(-0.5) + 1.0 + std::exp(-0.25) + std::exp(0.5)) / 5.0));
  CHECK(result.stats.is_weight_mean == 1.0);
  CHECK(result.stats.kl_k1_mean == 0.0);
}

TEST_CASE("sequence mean is the mean of per-sequence token means, and differs from the token mean") {
  const OwnedBatch b = basic_batch();
  LossOptions options;
  options.aggregation = Aggregation::sequence_mean;
  std::vector<float> grad(b.size());
  const train::LossResult result = train::evaluate_loss(b.view(false), options, grad.data());
  const double expected = ((-1.2 - std::exp(-0.5)) / 2.0 + (2.0 + 1.6 + std::exp(0.5)) / 3.0) / 2.0;
  CHECK(result.loss == doctest::Approx(expected).epsilon(1e-12));
  CHECK(result.loss != doctest::Approx(train::evaluate_loss(b.view(false), LossOptions(), nullptr).loss));
  CHECK(grad[1] == doctest::Approx(-std::exp(-0.5) / 4.0).epsilon(1e-6));
  CHECK(grad[2] == doctest::Approx(2.0 / 6.0).epsilon(1e-6));
  CHECK(grad[4] == doctest::Approx(std::exp(0.5) / 6.0).epsilon(1e-6));
}

TEST_CASE("clip_high above clip_low (DAPO clip-higher) unclips a large positive ratio") {
  const OwnedBatch b = basic_batch();
  LossOptions options;
  options.clip_high = 0.3;  // t0: r = 1.284 < 1.3, now unclipped: l = -r, dl = -r
  std::vector<float> grad(b.size());
  const train::LossResult result = train::evaluate_loss(b.view(false), options, grad.data());
  CHECK(result.loss == doctest::Approx((-std::exp(0.25) - std::exp(-0.5) + 2.0 + 1.6 + std::exp(0.5)) / 5.0));
  CHECK(grad[0] == doctest::Approx(-std::exp(0.25) / 5.0).epsilon(1e-6));
  CHECK(result.stats.clip_fraction == doctest::Approx(1.0 / 5.0));
}

TEST_CASE("importance weights multiply each token's loss and gradient, in every mode") {
  const double e = std::exp(1.0);
  LossOptions options;
  options.importance.low = 0.5;
  options.importance.high = 2.0;
  SUBCASE("plain") {
    options.importance.mode = ImportanceMode::plain;
    check_weighted(options, {std::exp(0.5), std::exp(-0.25), e, 1.0 / e, std::exp(0.125)});
  }
  SUBCASE("truncated to [0.5, 2]") {
    options.importance.mode = ImportanceMode::truncated;
    check_weighted(options, {std::exp(0.5), std::exp(-0.25), 2.0, 0.5, std::exp(0.125)});
  }
  SUBCASE("token masked outside [0.5, 2]") {
    options.importance.mode = ImportanceMode::token_masked;
    check_weighted(options, {std::exp(0.5), std::exp(-0.25), 0.0, 0.0, std::exp(0.125)});
  }
  SUBCASE("sequence masked by the geometric mean outside [0.5, 1.1]") {
    // Sequence 0: exp((0.5 - 0.25) / 2) = 1.133 > 1.1: zeroed. Sequence 1:
    // exp((1 - 1 + 0.125) / 3) = 1.043: kept with plain token weights, even
    // those (e, 1/e) outside [0.5, 1.1].
    options.importance.mode = ImportanceMode::sequence_masked;
    options.importance.high = 1.1;
    check_weighted(options, {0.0, 0.0, e, 1.0 / e, std::exp(0.125)});
  }
}

TEST_CASE("KL penalty to the reference: k1 and k3 by hand") {
  OwnedBatch b;
  b.add({{-1.0f, -1.0f, -1.0f, -1.5f, 0.0f}});  // A = 0: the policy term is 0; x = ref - logp = -0.5
  LossOptions options;
  options.kl_coefficient = 0.1;
  float grad = 0.0f;
  SUBCASE("k1") {
    options.kl_estimator = KlEstimator::k1;
    const train::LossResult result = train::evaluate_loss(b.view(), options, &grad);
    CHECK(result.loss == doctest::Approx(0.1 * 0.5).epsilon(1e-12));
    CHECK(grad == doctest::Approx(0.1).epsilon(1e-7));
  }
  SUBCASE("k3") {
    const train::LossResult result = train::evaluate_loss(b.view(), options, &grad);
    CHECK(result.loss == doctest::Approx(0.1 * (std::exp(-0.5) + 0.5 - 1.0)).epsilon(1e-12));
    CHECK(grad == doctest::Approx(0.1 * (1.0 - std::exp(-0.5))).epsilon(1e-6));
    CHECK(result.stats.kl_k1_mean == doctest::Approx(0.5));
    CHECK(result.stats.kl_k3_mean == doctest::Approx(std::exp(-0.5) - 0.5));
  }
  SUBCASE("the importance weight scales the penalty too") {
    b.logp_gen[0] = -1.5f;  // w = e^0.5
    options.importance.mode = ImportanceMode::plain;
    options.importance.high = 4.0;
    const train::LossResult result = train::evaluate_loss(b.view(), options, &grad);
    CHECK(result.loss == doctest::Approx(std::exp(0.5) * 0.1 * (std::exp(-0.5) - 0.5)).epsilon(1e-12));
  }
}

TEST_CASE("cross entropy (SFT): -mean logp over masked tokens, both aggregations") {
  OwnedBatch b;
  b.add({{-1.0f, kNaN, kNaN, kNaN, kNaN}, {-2.0f, kNaN, kNaN, kNaN, kNaN}});
  b.add({{-0.5f, kNaN, kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN, kNaN, kNaN, 0}});
  LossOptions options;
  options.kind = LossKind::cross_entropy;
  std::vector<float> grad(b.size());
  train::TokenBatch view = b.view(false);
  view.logp_old = view.logp_gen = view.advantages = nullptr;  // not read
  train::LossResult result = train::evaluate_loss(view, options, grad.data());
  CHECK(result.loss == doctest::Approx(3.5 / 3.0).epsilon(1e-12));
  for (size_t t = 0; t < 3; ++t) CHECK(grad[t] == doctest::Approx(-1.0 / 3.0).epsilon(1e-7));
  CHECK(grad[3] == 0.0f);
  options.aggregation = Aggregation::sequence_mean;
  result = train::evaluate_loss(view, options, grad.data());
  CHECK(result.loss == doctest::Approx((1.5 + 0.5) / 2.0).epsilon(1e-12));
  CHECK(grad[0] == doctest::Approx(-0.25));
  CHECK(grad[1] == doctest::Approx(-0.25));
  CHECK(grad[2] == doctest::Approx(-0.5));
}

TEST_CASE("no masked token: loss 0, gradient 0") {
  OwnedBatch b;
  b.add({{kNaN, kNaN, kNaN, kNaN, kNaN, 0}});
  b.add(std::vector<TokenRow>{});  // an empty sequence is allowed
  std::vector<float> grad(1, 5.0f);
  LossOptions options;
  options.aggregation = Aggregation::sequence_mean;
  const train::LossResult result = train::evaluate_loss(b.view(), options, grad.data());
  CHECK(result.loss == 0.0);
  CHECK(grad[0] == 0.0f);
  CHECK(result.stats.tokens == 0);
  CHECK(result.stats.sequences == 0);
}

TEST_CASE("dL/dlogp matches central finite differences for every mode, estimator and aggregation") {
  const ImportanceMode modes[] = {ImportanceMode::off, ImportanceMode::plain, ImportanceMode::truncated,
                                  ImportanceMode::token_masked, ImportanceMode::sequence_masked};
  for (const ImportanceMode mode : modes) {
    for (const Aggregation aggregation : {Aggregation::token_mean, Aggregation::sequence_mean}) {
      for (const double beta : {0.0, 0.05}) {
        for (const KlEstimator estimator : {KlEstimator::k1, KlEstimator::k3}) {
          LossOptions options;
          options.importance.mode = mode;
          options.importance.low = 0.7;
          options.importance.high = 1.3;
          options.aggregation = aggregation;
          options.kl_coefficient = beta;
          options.kl_estimator = estimator;
          options.clip_high = 0.28;
          for (uint32_t seed = 1; seed <= 3; ++seed) check_gradient(options, seed);
        }
      }
    }
  }
  LossOptions sft;
  sft.kind = LossKind::cross_entropy;
  check_gradient(sft, 9);
  sft.aggregation = Aggregation::sequence_mean;
  check_gradient(sft, 10);
}

TEST_CASE("loss errors: options, shapes and non-finite inputs") {
  OwnedBatch b = basic_batch();
  auto status_of = [&](const LossOptions& options, const train::TokenBatch& view) {
    try {
      train::evaluate_loss(view, options, nullptr);
    } catch (const Error& error) {
      return error.status();
    }
    return Status::ok;
  };
  const train::TokenBatch view = b.view(false);
  LossOptions options;
  CHECK(status_of(options, view) == Status::ok);  // NaN padding under mask 0 is fine
  options.clip_low = -0.1;
  CHECK(status_of(options, view) == Status::invalid_argument);
  options.clip_low = 1.5;
  CHECK(status_of(options, view) == Status::invalid_argument);
  options = LossOptions();
  options.clip_high = std::numeric_limits<double>::infinity();
  CHECK(status_of(options, view) == Status::invalid_argument);
  options = LossOptions();
  options.importance.low = 2.0;
  options.importance.high = 1.0;
  CHECK_THROWS_WITH_AS(train::evaluate_loss(view, options, nullptr), doctest::Contains("low must be <= high"), Error);
  options.importance.low = 0.0;
  options.importance.high = 0.0;
  CHECK(status_of(options, view) == Status::invalid_argument);
  options = LossOptions();
  options.kl_coefficient = 0.1;  // no logp_ref
  CHECK_THROWS_WITH_AS(train::evaluate_loss(view, options, nullptr), doctest::Contains("logp_ref"), Error);
  options.kl_coefficient = -1.0;
  CHECK(status_of(options, b.view()) == Status::invalid_argument);
  options = LossOptions();
  options.aggregation = static_cast<Aggregation>(7);
  CHECK(status_of(options, view) == Status::invalid_argument);

  options = LossOptions();
  train::TokenBatch broken = view;
  broken.advantages = nullptr;
  CHECK_THROWS_WITH_AS(train::evaluate_loss(broken, options, nullptr), doctest::Contains("advantages is null"), Error);
  const std::vector<int64_t> decreasing = {0, 3, 2};
  broken = view;
  broken.offsets = decreasing.data();
  CHECK(status_of(options, broken) == Status::invalid_argument);
  broken = view;
  broken.count = 0;
  CHECK(status_of(options, broken) == Status::invalid_argument);

  b.mask[1] = 2;
  CHECK(status_of(options, b.view(false)) == Status::invalid_argument);
  b.mask[1] = 1;
  b.logp[2] = kNaN;
  CHECK_THROWS_WITH_AS(train::evaluate_loss(b.view(false), options, nullptr),
                       doctest::Contains("logp[2] (sequence 1, position 0) is NaN"), Error);
  CHECK(status_of(options, b.view(false)) == Status::non_finite);
  b.logp[2] = -0.5f;
  b.logp_old[4] = -std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(train::evaluate_loss(b.view(false), options, nullptr), doctest::Contains("logp_old[4]"), Error);
  b.logp_old[4] = -3.5f;
  b.advantages[0] = kNaN;
  CHECK(status_of(options, b.view(false)) == Status::non_finite);
}

}  // namespace fp8rl::test
