// PPO mini-batch iterations: logp_old fixed once per iteration (so the ratio
// departs from 1 from the second mini-batch on and the clip acts), the
// host's logp_old used as given, the split and the iteration's totals, and
// bad input refused before any update.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/context.h"
#include "core/train/trainer.h"
#include "support/expect_error.h"
#include "trainer/trainer_test_support.h"

namespace fp8rl::test {
namespace {

train::TrainerOptions ppo_options(int64_t minibatches, double lr) {
  train::TrainerOptions options;
  options.schedule.base_lr = lr;
  options.loss.importance.mode = train::ImportanceMode::truncated;
  options.advantages.group_size = 2;
  options.advantages.normalize_by_std = true;
  options.micro_batch_tokens = 40;
  options.minibatches = minibatches;
  return options;
}

struct Fixture {
  Context context{cpu_request(2), Logger()};
  policy::Policy policy;
  RolloutBatch batch;
  explicit Fixture(const policy::Recipe& recipe = {})
      : policy(context, tiny_params(tiny_llama()), recipe),
        batch(generate_batch(policy, paired_prompts(tiny_llama(), {5, 9, 3, 7}), seeds_from(9, 8), test_sampling())) {}
};

}  // namespace

TEST_CASE("four mini-batches: ratio 1 on the first, then the policy moves away from logp_old and the clip acts") {
  Fixture f;
  train::Trainer trainer(f.policy, ppo_options(4, 5e-2));
  const train::IterationMetrics it = trainer.iterate(f.batch.view());
  REQUIRE(it.minibatches.size() == 4);
  const train::StepMetrics& first = it.minibatches[0];
  CHECK(first.loss_stats.ratio_min == 1.0);
  CHECK(first.loss_stats.ratio_max == 1.0);
  CHECK(first.loss_stats.clip_fraction == 0.0);
  CHECK(first.loss_stats.old_kl_k3_mean == 0.0);
  double clipped = 0.0;
  for (size_t k = 1; k < 4; ++k) {
    CAPTURE(k);
    const train::StepMetrics& m = it.minibatches[k];
    CHECK(m.loss_stats.ratio_min < m.loss_stats.ratio_max);
    CHECK(m.loss_stats.old_kl_k3_mean > 0.0);
    CHECK(m.step == static_cast<int64_t>(k) + 1);
    CHECK(m.sequences == 2);
    clipped += m.loss_stats.clip_fraction;
  }
  CHECK(clipped > 0.0);
  CHECK(trainer.steps() == 4);

  // The totals follow StepMetrics' rules.
  const train::StepMetrics& total = it.total;
  CHECK(total.minibatches == 4);
  CHECK(total.step == 4);
  CHECK(total.sequences == 8);
  CHECK(total.completion_tokens == f.batch.completion_tokens());
  double loss = 0.0, ratio_min = 1e300, ratio_max = 0.0;
  int64_t trained = 0;
  for (const train::StepMetrics& m : it.minibatches) {
    loss += m.loss / 4.0;
    ratio_min = std::min(ratio_min, m.loss_stats.ratio_min);
    ratio_max = std::max(ratio_max, m.loss_stats.ratio_max);
    trained += m.trained_tokens;
  }
  CHECK(total.loss == doctest::Approx(loss).epsilon(1e-12));
  CHECK(total.loss_stats.ratio_min == ratio_min);
  CHECK(total.loss_stats.ratio_max == ratio_max);
  CHECK(total.trained_tokens == trained);
  REQUIRE(total.has_mismatch);
  CHECK(total.mismatch.token_mult_prob_error == 1.0);  // logp_old is the generator's, bit for bit
}

TEST_CASE("with a zero learning rate every mini-batch's ratio is exactly 1: the scoring pass is the training forward") {
  Fixture f(all_recipes()[4].recipe);  // FP8 linear, KV cache and attention
  train::TrainerOptions options = ppo_options(3, 0.0);
  // New attention scales would change the FP8 KV cache's numerics, and so the ratio.
  options.recalibrate_after_step = false;
  train::Trainer trainer(f.policy, options);
  const train::IterationMetrics it = trainer.iterate(f.batch.view());
  REQUIRE(it.minibatches.size() == 3);
  for (const train::StepMetrics& m : it.minibatches) {
    CHECK(m.loss_stats.ratio_min == 1.0);
    CHECK(m.loss_stats.ratio_max == 1.0);
  }
  CHECK(it.minibatches[0].sequences == 2);  // 8 sequences in 3: 2, 3, 3 (k * count / minibatches)
  CHECK(it.minibatches[1].sequences == 3);
  CHECK(it.total.mismatch.gen_kl_error == 0.0);
}

TEST_CASE("the host's logp_old is used as given") {
  Fixture f;
  std::vector<float> shifted = f.batch.logp_gen;
  for (size_t t = 0; t < shifted.size(); ++t) shifted[t] -= 0.01f * static_cast<float>(t % 7);
  train::TrainBatch batch = f.batch.view();
  batch.logp_old = shifted.data();
  train::Trainer trainer(f.policy, ppo_options(2, 1e-3));
  const train::IterationMetrics it = trainer.iterate(batch);

  // Before the first update logp is the generator's (same recipe), so the
  // first mini-batch's ratios are exp(logp_gen - logp_old) exactly.
  const int64_t first_tokens = it.minibatches[0].completion_tokens;
  double ratio_sum = 0.0, ratio_max = 0.0;
  for (int64_t t = 0; t < first_tokens; ++t) {
    const double r = std::exp(static_cast<double>(f.batch.logp_gen[t]) - static_cast<double>(shifted[t]));
    ratio_sum += r;
    ratio_max = std::max(ratio_max, r);
  }
  CHECK(it.minibatches[0].loss_stats.ratio_mean ==
        doctest::Approx(ratio_sum / static_cast<double>(first_tokens)).epsilon(1e-12));
  CHECK(it.minibatches[0].loss_stats.ratio_max == doctest::Approx(ratio_max).epsilon(1e-12));
  CHECK(it.total.mismatch.token_mult_prob_error > 1.0);  // measured against the host's logp_old
}

TEST_CASE("supplying the logp_old the trainer would compute changes nothing, bit for bit") {
  Fixture a, b;
  train::Trainer computed(a.policy, ppo_options(4, 1e-2));
  const train::IterationMetrics expected = computed.iterate(a.batch.view());
  train::TrainBatch given = b.batch.view();
  given.logp_old = b.batch.logp_gen.data();  // the generator's = the policy before the iteration
  train::Trainer supplied(b.policy, ppo_options(4, 1e-2));
  const train::IterationMetrics actual = supplied.iterate(given);
  CHECK(same_weights(a.policy.params(), b.policy.params()));
  for (size_t k = 0; k < 4; ++k) {
    CHECK(actual.minibatches[k].loss == expected.minibatches[k].loss);
    CHECK(actual.minibatches[k].grad_norm == expected.minibatches[k].grad_norm);
  }
}

TEST_CASE("bad iterations are refused before any update") {
  Fixture f;
  const model::ModelParams before = f.policy.params();
  train::Trainer trainer(f.policy, ppo_options(9, 1e-2));  // 8 sequences
  expect_error([&] { trainer.iterate(f.batch.view()); }, Status::invalid_argument, {"minibatches is 9"});

  train::Trainer four(f.policy, ppo_options(4, 1e-2));
  std::vector<float> bad_old = f.batch.logp_gen;
  bad_old[3] = NAN;
  train::TrainBatch batch = f.batch.view();
  batch.logp_old = bad_old.data();
  expect_error([&] { four.iterate(batch); }, Status::non_finite, {"logp_old[3]"});

  // A bad advantage in the last mini-batch is found before the first one updates.
  std::vector<float> advantages(8, 0.5f);
  advantages[7] = INFINITY;
  batch = f.batch.view();
  batch.rewards = nullptr;
  batch.advantages = advantages.data();
  expect_error([&] { four.iterate(batch); }, Status::non_finite, {"advantages"});
  CHECK(four.steps() == 0);
  CHECK(same_weights(before, f.policy.params()));

  train::TrainerOptions zero = ppo_options(0, 1e-2);
  expect_error([&] { train::Trainer t(f.policy, zero); }, Status::invalid_argument, {"minibatches must be >= 1"});
}

}  // namespace fp8rl::test
