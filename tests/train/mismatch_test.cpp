// Train/generator mismatch metrics (core/train/mismatch_metrics.h) for
// identical and known log-prob differences.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/train/mismatch_metrics.h"
#include "kernels/error.h"
#include "train/train_test_support.h"

namespace fp8rl::test {

TEST_CASE("identical log-probs: token_mult_prob_error == 1 and gen_kl_error == 0 exactly") {
  OwnedBatch b;
  b.add({{0.0f, -0.123f, -0.123f, 0.0f, 0.0f}, {0.0f, -5.75f, -5.75f, 0.0f, 0.0f}});
  b.add({{0.0f, -17.3f, -17.3f, 0.0f, 0.0f}});
  train::ImportanceOptions importance;
  importance.mode = train::ImportanceMode::truncated;
  const train::MismatchMetrics m = train::mismatch_metrics(b.view(), importance);
  CHECK(m.tokens == 3);
  CHECK(m.token_mult_prob_error == 1.0);
  CHECK(m.gen_kl_error == 0.0);
  CHECK(m.gen_kl_k1 == 0.0);
  CHECK(m.policy_kl_error == 0.0);
  CHECK(m.is_weight_mean == 1.0);
  CHECK(m.is_truncated_fraction == 0.0);
}

TEST_CASE("known differences: NeMo-RL definitions by hand") {
  // x = logp_old - logp_gen = 0.5 and -0.25; a padded token and a token
  // with logp_gen = -inf (excluded from the means, counted).
  OwnedBatch b;
  b.add({{0.0f, -1.0f, -1.5f, 0.0f, 0.0f}, {0.0f, -1.0f, -0.75f, 0.0f, 0.0f}});
  b.add({{0.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f, 0.0f, 0},
         {0.0f, -2.0f, -std::numeric_limits<float>::infinity(), 0.0f, 0.0f}});
  train::ImportanceOptions importance;
  importance.mode = train::ImportanceMode::token_masked;
  importance.low = 0.9;
  importance.high = 1.5;  // e^0.5 = 1.65 is masked, e^-0.25 = 0.78 too
  const train::MismatchMetrics m = train::mismatch_metrics(b.view(), importance);
  CHECK(m.tokens == 3);
  CHECK(m.non_finite_tokens == 1);
  CHECK(m.token_mult_prob_error == doctest::Approx((std::exp(0.5) + std::exp(0.25)) / 2.0).epsilon(1e-15));
  CHECK(m.gen_kl_error ==
        doctest::Approx(((std::exp(0.5) - 0.5 - 1.0) + (std::exp(-0.25) + 0.25 - 1.0)) / 2.0).epsilon(1e-14));
  CHECK(m.gen_kl_k1 == doctest::Approx((-0.5 + 0.25) / 2.0).epsilon(1e-15));
  CHECK(m.policy_kl_error ==
        doctest::Approx(((std::exp(-0.5) + 0.5 - 1.0) + (std::exp(0.25) - 0.25 - 1.0)) / 2.0).epsilon(1e-14));
  CHECK(m.is_weight_mean == 0.0);  // both finite weights masked, the -inf one zeroed
  CHECK(m.is_masked_fraction == doctest::Approx(2.0 / 3.0));
}

TEST_CASE("mismatch errors: a NaN training log-prob on a masked token") {
  OwnedBatch b;
  b.add({{0.0f, std::numeric_limits<float>::quiet_NaN(), -1.0f, 0.0f, 0.0f}});
  CHECK_THROWS_WITH_AS(train::mismatch_metrics(b.view(), train::ImportanceOptions()), doctest::Contains("logp_old[0]"),
                       Error);
}

}  // namespace fp8rl::test
