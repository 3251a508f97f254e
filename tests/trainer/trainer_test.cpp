// The trainer on tiny models: consistency of the recomputed log-probs with
// the generator's, mismatch metrics against the formulas, recalibration,
// skipped steps, bitwise resume, micro-batching and learning.
#include "core/train/trainer.h"

#include <doctest/doctest.h>

#include <cmath>

#include "core/context.h"
#include "core/policy/compiled_model.h"
#include "core/rollout/rollout.h"
#include "core/train/param_arena.h"
#include "core/train/training_pass.h"
#include "core/train/transposed_model.h"
#include "trainer/trainer_test_support.h"

namespace fp8rl::test {

TEST_CASE("recomputed log-probs equal the generator's when the recipes are equal") {
  for (const NamedConfig& named : tiny_configs()) {
    for (const NamedRecipe& recipe : all_recipes()) {
      CAPTURE(named.name);
      CAPTURE(recipe.name);
      Context context(cpu_request(2), Logger());
      policy::Policy policy(context, tiny_params(named.config), recipe.recipe);
      policy.set_attention_scales(test_scales(named.config.num_layers));
      const FlatSequences prompts = paired_prompts(named.config, {5, 9, 3});
      const RolloutBatch batch = generate_batch(policy, prompts, seeds_from(3, 6), test_sampling());
      train::Trainer trainer(policy, test_options());
      const train::BatchGradients gradients = trainer.gradients(batch.view());
      CHECK(same_floats(gradients.logp, batch.logp_gen));  // the training forward, micro-batched
      const train::StepMetrics m = trainer.step(batch.view());
      REQUIRE(m.has_mismatch);
      CHECK(m.mismatch.token_mult_prob_error == 1.0);
      CHECK(m.mismatch.gen_kl_error == 0.0);
      CHECK(m.loss_stats.ratio_mean == 1.0);
      CHECK(m.loss_stats.is_weight_mean == 1.0);
      CHECK_FALSE(m.skipped);
      CHECK(m.completion_tokens == batch.completion_tokens());
    }
  }
}

TEST_CASE("FP8 generation scored by BF16 training: the mismatch metrics and weights follow the formulas") {
  const model::ModelConfig config = tiny_llama();
  Context context(cpu_request(2), Logger());
  policy::Recipe fp8;
  fp8.linear = policy::Precision::fp8;
  fp8.kv_cache = policy::Precision::fp8;
  policy::Policy generator(context, tiny_params(config), fp8);
  policy::Policy learner(context, tiny_params(config));  // BF16, same weights
  const RolloutBatch batch =
      generate_batch(generator, paired_prompts(config, {5, 9, 3}), seeds_from(7, 6), test_sampling());
  train::TrainerOptions options = test_options();
  options.loss.importance.high = 1.01;  // low enough that some weights are truncated
  train::Trainer trainer(learner, options);
  const std::vector<float> logp_old = trainer.recompute_logprobs(batch.sequences.view(), batch.prompt_lengths);
  const train::StepMetrics m = trainer.step(batch.view());

  // Independent evaluation of the definitions over the same log-probs.
  double mult = 0.0, kl = 0.0, weights = 0.0;
  int64_t truncated = 0;
  for (size_t t = 0; t < logp_old.size(); ++t) {
    const double x = static_cast<double>(logp_old[t]) - static_cast<double>(batch.logp_gen[t]);
    mult += std::exp(std::fabs(x));
    kl += std::exp(x) - x - 1.0;
    const double w = std::exp(x);
    weights += std::min(w, 1.01);
    truncated += w > 1.01 ? 1 : 0;
  }
  const double n = static_cast<double>(logp_old.size());
  CHECK(m.mismatch.token_mult_prob_error > 1.0);
  CHECK(m.mismatch.gen_kl_error > 0.0);
  CHECK(m.mismatch.token_mult_prob_error == doctest::Approx(mult / n).epsilon(1e-12));
  CHECK(m.mismatch.gen_kl_error == doctest::Approx(kl / n).epsilon(1e-9));
  CHECK(m.mismatch.is_weight_mean == doctest::Approx(weights / n).epsilon(1e-12));
  CHECK(m.mismatch.is_truncated_fraction == doctest::Approx(static_cast<double>(truncated) / n));
  CHECK(truncated > 0);
  CHECK(m.loss_stats.is_weight_mean == doctest::Approx(weights / n).epsilon(1e-12));
}

TEST_CASE("after a step the weights and scales are recalibrated and the next rollout uses them") {
  const model::ModelConfig config = tiny_qwen3();
  Context context(cpu_request(2), Logger());
  policy::Recipe recipe = all_recipes()[4].recipe;  // FP8 linear, KV cache and attention
  policy::Policy policy(context, tiny_params(config), recipe);
  const FlatSequences prompts = paired_prompts(config, {5, 9, 3});
  const RolloutBatch batch = generate_batch(policy, prompts, seeds_from(1, 6), test_sampling());
  const policy::AttentionScales before = policy.attention_scales();
  train::Trainer trainer(policy, test_options());
  const train::StepMetrics m = trainer.step(batch.view());
  REQUIRE_FALSE(m.skipped);
  CHECK(m.seconds.recalibration > 0.0);
  CHECK(m.recalibration_fraction > 0.0);
  CHECK(m.recalibration_fraction < 1.0);
  const policy::AttentionScales after = policy.attention_scales();
  CHECK_FALSE(same_floats(after.k, before.k));
  CHECK_FALSE(same_floats(after.q, before.q));
  for (float s : after.v) CHECK((std::isnormal(s) && s > 0.0f));

  // A fresh policy built from the updated master weights and scales generates
  // exactly what the trained policy generates: the compute copies were refitted.
  policy::Policy fresh(context, policy.params(), recipe);
  fresh.set_attention_scales(after);
  const RolloutBatch next = generate_batch(policy, prompts, seeds_from(1, 6), test_sampling());
  const RolloutBatch expected = generate_batch(fresh, prompts, seeds_from(1, 6), test_sampling());
  CHECK(next.sequences.tokens == expected.sequences.tokens);
  CHECK(same_floats(next.logp_gen, expected.logp_gen));
  CHECK_FALSE(same_floats(next.logp_gen, batch.logp_gen));  // the weights did change
}

TEST_CASE("a step whose gradient overflows is skipped and changes nothing") {
  const model::ModelConfig config = tiny_llama();
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(config));
  // One completion token per sequence, so that each token's loss weight is 1/6.
  const RolloutBatch batch =
      generate_batch(policy, paired_prompts(config, {5, 9, 3}), seeds_from(5, 6), test_sampling(1));
  train::TrainerOptions options = test_options();
  options.loss.importance.mode = train::ImportanceMode::off;
  options.temperature = 0.1f;
  train::Trainer trainer(policy, options);
  trainer.step(batch.view());  // non-zero optimizer state
  const train::TrainingState before = trainer.state();

  // Finite advantages whose logit gradients, |A| / 6 / temperature, exceed the FP32 range.
  std::vector<float> huge(batch.rewards.size(), 3.4e38f);
  for (size_t i = 0; i < huge.size(); i += 2) huge[i] = -3.4e38f;
  train::TrainBatch overflowing = batch.view();
  overflowing.rewards = nullptr;
  overflowing.advantages = huge.data();
  const train::StepMetrics m = trainer.step(overflowing);
  CHECK(m.skipped);
  CHECK(m.skip_reason.find("non-finite gradient in ") != std::string::npos);
  CHECK(m.step == 2);
  const train::TrainingState after = trainer.state();
  CHECK(same_weights(after.params, before.params));
  CHECK(after.optimizer_steps == before.optimizer_steps);
  for (size_t i = 0; i < before.exp_avg.size(); ++i) {
    CHECK(same_floats(after.exp_avg[i], before.exp_avg[i]));
    CHECK(same_floats(after.exp_avg_sq[i], before.exp_avg_sq[i]));
  }
  CHECK(same_floats(after.scales.k, before.scales.k));
}

TEST_CASE("a restored trainer continues bit for bit") {
  const model::ModelConfig config = tiny_qwen2();
  const policy::Recipe recipe = all_recipes()[3].recipe;  // FP8 linear and KV cache
  const FlatSequences prompts = paired_prompts(config, {5, 9, 3});
  auto run_steps = [&](train::Trainer& trainer, policy::Policy& policy, int steps) {
    std::vector<train::StepMetrics> metrics;
    for (int s = 0; s < steps; ++s) {
      const RolloutBatch batch = generate_batch(policy, prompts, trainer.next_seeds(6), test_sampling());
      metrics.push_back(trainer.step(batch.view()));
    }
    return metrics;
  };
  Context context(cpu_request(2), Logger());
  train::TrainerOptions options = test_options();
  options.schedule.kind = train::LrScheduleKind::warmup_cosine;
  options.schedule.warmup_steps = 1;
  options.schedule.total_steps = 6;
  options.seed = 99;
  policy::Policy first(context, tiny_params(config), recipe);
  train::Trainer uninterrupted(first, options);
  run_steps(uninterrupted, first, 2);
  const train::TrainingState checkpoint = uninterrupted.state();
  const std::vector<train::StepMetrics> expected = run_steps(uninterrupted, first, 2);

  policy::Policy second(context, tiny_params(config, 4242), policy::Recipe{});  // other weights and recipe
  train::TrainerOptions other = options;
  other.seed = 1;
  train::Trainer resumed(second, other);
  resumed.restore(checkpoint);
  const std::vector<train::StepMetrics> got = run_steps(resumed, second, 2);
  CHECK(same_weights(second.params(), first.params()));
  CHECK(second.recipe() == first.recipe());
  CHECK(same_floats(second.attention_scales().k, first.attention_scales().k));
  for (size_t s = 0; s < got.size(); ++s) {
    CHECK(got[s].loss == expected[s].loss);
    CHECK(got[s].grad_norm == expected[s].grad_norm);
    CHECK(got[s].learning_rate == expected[s].learning_rate);
    CHECK(got[s].step == expected[s].step);
  }
}

TEST_CASE("micro-batching changes the gradient only by rounding") {
  const model::ModelConfig config = tiny_llama();
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(config));
  const RolloutBatch batch =
      generate_batch(policy, paired_prompts(config, {5, 9, 3}), seeds_from(2, 6), test_sampling());
  train::TrainerOptions small = test_options(), large = test_options();
  small.micro_batch_tokens = 1;  // one sequence per micro-batch
  large.micro_batch_tokens = 4096;
  train::Trainer a(policy, small);
  const train::BatchGradients split = a.gradients(batch.view());
  train::Trainer b(policy, large);
  const train::BatchGradients whole = b.gradients(batch.view());
  CHECK(split.loss.loss == doctest::Approx(whole.loss.loss).epsilon(1e-12));
  CHECK(same_floats(split.logp, whole.logp));
  for (size_t i = 0; i < split.grads.size(); ++i) {
    double diff = 0.0, norm = 0.0;
    for (size_t j = 0; j < split.grads[i].size(); ++j) {
      const double d = split.grads[i][j] - whole.grads[i][j];
      diff += d * d;
      norm += static_cast<double>(whole.grads[i][j]) * whole.grads[i][j];
    }
    CAPTURE(i);
    CHECK(norm > 0.0);
    CHECK(std::sqrt(diff) <= 1e-5 * std::sqrt(norm));
  }
}

TEST_CASE("a scoring pass between a training forward and its backward leaves the gradients bitwise unchanged") {
  for (const NamedConfig& named : tiny_configs()) {
    for (const NamedRecipe& recipe : all_recipes()) {
      CAPTURE(named.name);
      CAPTURE(recipe.name);
      Context context(cpu_request(2), Logger());
      policy::Policy policy(context, tiny_params(named.config), recipe.recipe);
      policy.set_attention_scales(test_scales(named.config.num_layers));
      Backend& backend = context.backend();
      train::ParamArena arena(backend, policy.host_tensors());
      const train::TransposedModel transposed(backend, policy.compiled());
      train::TrainingPass pass(policy);
      const FlatSequences trained = test_prompts({9, 6}, named.config.vocab_size);
      const std::vector<int64_t> prompt_lengths{4, 2};
      // Other ids, positions and key ranges than the training pass's, and more tokens.
      const FlatSequences scored = test_prompts({13, 3, 17}, named.config.vocab_size, 5);
      const std::vector<int64_t> scored_prompts{2, 1, 6};

      auto gradients = [&](bool score_between) {
        arena.zero_grads();
        const std::vector<float> logp = pass.forward(trained.view(), prompt_lengths, 0, 2, 1.0f);
        if (score_between) rollout::score_completions(policy, scored.view(), scored_prompts, test_sampling());
        std::vector<float> grad_logp(logp.size()), entropy(logp.size());
        for (size_t t = 0; t < logp.size(); ++t) grad_logp[t] = 0.25f - 0.1f * static_cast<float>(t % 5);
        pass.backward(grad_logp.data(), transposed, arena, entropy.data());
        std::vector<std::vector<float>> grads;
        arena.download(arena.grads(), grads);
        return grads;
      };
      const std::vector<std::vector<float>> alone = gradients(false);
      const std::vector<std::vector<float>> with_scoring = gradients(true);
      REQUIRE(alone.size() == with_scoring.size());
      for (size_t i = 0; i < alone.size(); ++i) CHECK(same_floats(alone[i], with_scoring[i]));
    }
  }
}

TEST_CASE("SFT steps lower the cross-entropy of a fixed batch, in BF16 and FP8") {
  for (const NamedRecipe& recipe : {all_recipes()[0], all_recipes()[4]}) {
    CAPTURE(recipe.name);
    const model::ModelConfig config = tiny_llama();
    Context context(cpu_request(2), Logger());
    policy::Policy policy(context, tiny_params(config), recipe.recipe);
    RolloutBatch batch = generate_batch(policy, paired_prompts(config, {5, 9, 3}), seeds_from(8, 6), test_sampling());
    train::TrainerOptions options = test_options();
    options.loss.kind = train::LossKind::cross_entropy;
    options.schedule.base_lr = 3e-3;
    train::Trainer trainer(policy, options);
    train::TrainBatch view = batch.view();
    view.rewards = nullptr;
    view.logp_gen = nullptr;
    const double first = trainer.step(view).loss;
    double last = first;
    for (int s = 0; s < 5; ++s) last = trainer.step(view).loss;
    CHECK(last < 0.8 * first);
  }
}

TEST_CASE("bad batches are refused before anything changes") {
  const model::ModelConfig config = tiny_llama();
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(config));
  const RolloutBatch batch =
      generate_batch(policy, paired_prompts(config, {5, 9, 3}), seeds_from(4, 6), test_sampling());
  train::Trainer trainer(policy, test_options());
  const train::TrainingState before = trainer.state();
  auto refused = [&](train::TrainBatch bad, const char* words) {
    try {
      trainer.step(bad);
      FAIL("accepted a bad batch: " << words);
    } catch (const Error& error) {
      CHECK(error.status() == Status::invalid_argument);
      CHECK(std::string(error.what()).find(words) != std::string::npos);
    }
  };
  train::TrainBatch bad = batch.view();
  bad.prompt_lengths = nullptr;
  refused(bad, "prompt_lengths");
  std::vector<int64_t> long_prompts = batch.prompt_lengths;
  long_prompts[1] = 1000;
  bad = batch.view();
  bad.prompt_lengths = long_prompts.data();
  refused(bad, "prompt length 1000 of sequence 1");
  bad = batch.view();
  bad.advantages = batch.rewards.data();
  refused(bad, "exactly one of rewards and advantages");
  bad = batch.view();
  bad.logp_gen = nullptr;
  refused(bad, "needs logp_gen");
  std::vector<int32_t> out_of_range = batch.sequences.tokens;
  out_of_range[3] = static_cast<int32_t>(config.vocab_size);
  bad = batch.view();
  bad.sequences.tokens = out_of_range.data();
  refused(bad, "sequence 0");
  CHECK(trainer.steps() == 0);
  CHECK(same_weights(trainer.state().params, before.params));
}

}  // namespace fp8rl::test

namespace fp8rl::test {

TEST_CASE("the KL penalty to a reference policy: metrics follow the estimators' formulas") {
  const model::ModelConfig config = tiny_llama();
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(config));
  policy::Policy reference(context, tiny_params(config, 77));  // other weights
  const RolloutBatch batch =
      generate_batch(policy, paired_prompts(config, {5, 9, 3}), seeds_from(6, 6), test_sampling());
  train::TrainerOptions options = test_options();
  options.loss.kl_coefficient = 0.1;
  options.loss.kl_estimator = train::KlEstimator::k3;
  train::Trainer trainer(policy, options);
  train::Trainer reference_scorer(reference, options);
  const std::vector<float> logp_ref = reference_scorer.recompute_logprobs(batch.sequences.view(), batch.prompt_lengths);
  train::TrainBatch view = batch.view();
  train::TrainBatch without_ref = view;
  view.logp_ref = logp_ref.data();
  CHECK_THROWS_AS(trainer.step(without_ref), Error);  // the penalty needs logp_ref

  double k1 = 0.0, k3 = 0.0;
  for (size_t t = 0; t < logp_ref.size(); ++t) {
    // On-policy, the training log-probs are the generator's.
    const double x = static_cast<double>(logp_ref[t]) - static_cast<double>(batch.logp_gen[t]);
    k1 += -x;
    k3 += std::exp(x) - x - 1.0;
  }
  const double n = static_cast<double>(logp_ref.size());
  const train::StepMetrics m = trainer.step(view);
  CHECK(m.loss_stats.kl_k1_mean == doctest::Approx(k1 / n).epsilon(1e-9));
  CHECK(m.loss_stats.kl_k3_mean == doctest::Approx(k3 / n).epsilon(1e-9));
  CHECK(m.loss_stats.kl_k3_mean > 0.0);
}

}  // namespace fp8rl::test
