// Mismatch metrics through the C API: a training recomputation with the
// generator's own recipe reproduces the rollout exactly (1 and 0), another
// recipe gives the non-zero mismatch and the importance weights the formulas
// say (recomputed here in double), and bad input is refused.
#include <doctest/doctest.h>

#include <cmath>

#include "capi_policy_fixture.h"

namespace capi_test {
namespace {

struct Batch {
  std::vector<float> logp_gen;  // [completion tokens]
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> whole;  // prompt + completion of every sequence
  std::vector<int64_t> whole_offsets{0};
  std::vector<int64_t> prompt_lengths;
};

Batch rollout_batch(fp8rl_policy* policy, const Prompts& prompts, const fp8rl_sampling_options& options) {
  Batch batch;
  const std::vector<Completion> completions = generate(policy, prompts, options);
  for (size_t i = 0; i < completions.size(); ++i) {
    const Completion& c = completions[i];
    batch.logp_gen.insert(batch.logp_gen.end(), c.logprobs.begin(), c.logprobs.end());
    batch.offsets.push_back(static_cast<int64_t>(batch.logp_gen.size()));
    batch.whole.insert(batch.whole.end(), prompts.tokens.begin() + prompts.offsets[i],
                       prompts.tokens.begin() + prompts.offsets[i + 1]);
    batch.whole.insert(batch.whole.end(), c.tokens.begin(), c.tokens.end());
    batch.whole_offsets.push_back(static_cast<int64_t>(batch.whole.size()));
    batch.prompt_lengths.push_back(prompts.offsets[i + 1] - prompts.offsets[i]);
  }
  return batch;
}

std::vector<float> recompute(fp8rl_policy* policy, const Batch& batch, const fp8rl_sampling_options& options) {
  std::vector<float> logp(batch.logp_gen.size());
  REQUIRE(fp8rl_policy_score(policy, batch.whole.data(), batch.whole_offsets.data(),
                             static_cast<int64_t>(batch.prompt_lengths.size()), batch.prompt_lengths.data(), &options,
                             logp.data(), static_cast<int64_t>(logp.size())) == FP8RL_OK);
  return logp;
}

fp8rl_mismatch_metrics metrics_of(const std::vector<float>& train, const Batch& batch,
                                  const fp8rl_importance_options& importance) {
  fp8rl_mismatch_metrics metrics;
  REQUIRE(fp8rl_mismatch_metrics_init(&metrics) == FP8RL_OK);
  REQUIRE_MESSAGE(
      fp8rl_mismatch_metrics_compute(train.data(), batch.logp_gen.data(), batch.offsets.data(),
                                     static_cast<int64_t>(batch.offsets.size()) - 1, &importance, &metrics) == FP8RL_OK,
      std::string(fp8rl_last_error_message()));
  return metrics;
}

}  // namespace

TEST_CASE("mismatch: the generator's own recipe recomputes its log-probs exactly (error 1, KL 0, weights 1)") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  policy.set_recipe(fp8_everything_recipe());
  const fp8rl_sampling_options options = sampling(1.0f, 10);
  const Batch batch = rollout_batch(policy.get(), mixed_prompts(), options);
  fp8rl_importance_options importance;
  REQUIRE(fp8rl_importance_options_init(&importance) == FP8RL_OK);
  importance.mode = FP8RL_IMPORTANCE_TRUNCATED;  // the default is off: w = 1 whatever the log-probs
  const fp8rl_mismatch_metrics m = metrics_of(recompute(policy.get(), batch, options), batch, importance);
  CHECK(m.tokens == static_cast<int64_t>(batch.logp_gen.size()));
  CHECK(m.token_mult_prob_error == 1.0);
  CHECK(m.gen_kl_error == 0.0);
  CHECK(m.gen_kl_k1 == 0.0);
  CHECK(m.is_weight_mean == 1.0);
  CHECK(m.is_truncated_fraction == 0.0);
}

TEST_CASE("mismatch: FP8 generation scored by BF16 training gives the mismatch and weights the formulas give") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  policy.set_recipe(fp8_everything_recipe());
  const fp8rl_sampling_options options = sampling(1.0f, 10);
  const Batch batch = rollout_batch(policy.get(), mixed_prompts(), options);
  policy.set_recipe(default_recipe());  // the trainer in BF16
  const std::vector<float> train = recompute(policy.get(), batch, options);

  fp8rl_importance_options importance;
  REQUIRE(fp8rl_importance_options_init(&importance) == FP8RL_OK);
  importance.mode = FP8RL_IMPORTANCE_TRUNCATED;
  importance.high = 1.002;  // small enough that some weights are truncated
  const fp8rl_mismatch_metrics m = metrics_of(train, batch, importance);
  double mult = 0.0, k3 = 0.0, weights = 0.0;
  int64_t truncated = 0;
  for (size_t t = 0; t < train.size(); ++t) {
    const double x = static_cast<double>(train[t]) - batch.logp_gen[t];
    mult += std::exp(std::fabs(x));
    k3 += std::exp(x) - x - 1.0;
    const double w = std::exp(x);
    truncated += w > importance.high;
    weights += std::min(w, importance.high);
  }
  const double n = static_cast<double>(train.size());
  MESSAGE("token_mult_prob_error " << m.token_mult_prob_error << ", gen_kl_error " << m.gen_kl_error << " over "
                                   << m.tokens << " tokens");
  CHECK(m.token_mult_prob_error > 1.0);
  CHECK(m.gen_kl_error > 0.0);
  CHECK(m.token_mult_prob_error == doctest::Approx(mult / n).epsilon(1e-12));
  CHECK(m.gen_kl_error == doctest::Approx(k3 / n).epsilon(1e-9));
  CHECK(m.is_weight_mean == doctest::Approx(weights / n).epsilon(1e-12));
  CHECK(m.is_truncated_fraction == doctest::Approx(static_cast<double>(truncated) / n).epsilon(1e-12));
}

TEST_CASE("mismatch: NULLs, bad options, malformed offsets and NaN are refused") {
  const std::vector<float> train = {-1.0f, -2.0f, -0.5f}, gen = {-1.1f, -2.0f, -0.4f};
  const std::vector<int64_t> offsets = {0, 2, 3};
  fp8rl_importance_options importance;
  REQUIRE(fp8rl_importance_options_init(&importance) == FP8RL_OK);
  fp8rl_mismatch_metrics m;
  REQUIRE(fp8rl_mismatch_metrics_init(&m) == FP8RL_OK);
  check_error(fp8rl_mismatch_metrics_compute(nullptr, gen.data(), offsets.data(), 2, &importance, &m),
              FP8RL_ERROR_INVALID_ARGUMENT, "logp_old");
  check_error(fp8rl_mismatch_metrics_compute(train.data(), gen.data(), offsets.data(), 2, &importance, nullptr),
              FP8RL_ERROR_INVALID_ARGUMENT, "out_metrics");
  check_error(fp8rl_mismatch_metrics_compute(train.data(), gen.data(), offsets.data(), 2, nullptr, &m),
              FP8RL_ERROR_INVALID_ARGUMENT, "options");
  importance.mode = static_cast<fp8rl_importance_mode>(9);
  check_error(fp8rl_mismatch_metrics_compute(train.data(), gen.data(), offsets.data(), 2, &importance, &m),
              FP8RL_ERROR_INVALID_ARGUMENT, "mode");
  REQUIRE(fp8rl_importance_options_init(&importance) == FP8RL_OK);
  importance.low = 3.0;  // above high
  CHECK(fp8rl_mismatch_metrics_compute(train.data(), gen.data(), offsets.data(), 2, &importance, &m) ==
        FP8RL_ERROR_INVALID_ARGUMENT);
  REQUIRE(fp8rl_importance_options_init(&importance) == FP8RL_OK);
  const std::vector<int64_t> decreasing = {0, 3, 2};
  CHECK(fp8rl_mismatch_metrics_compute(train.data(), gen.data(), decreasing.data(), 2, &importance, &m) ==
        FP8RL_ERROR_INVALID_ARGUMENT);
  const std::vector<float> nan_train = {-1.0f, NAN, -0.5f};
  CHECK(fp8rl_mismatch_metrics_compute(nan_train.data(), gen.data(), offsets.data(), 2, &importance, &m) ==
        FP8RL_ERROR_NON_FINITE);
  m.struct_size = 2;
  CHECK(fp8rl_mismatch_metrics_compute(train.data(), gen.data(), offsets.data(), 2, &importance, &m) ==
        FP8RL_ERROR_VERSION_MISMATCH);
}

}  // namespace capi_test
