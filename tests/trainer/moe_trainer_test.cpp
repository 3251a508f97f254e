// Training Mixture-of-Experts policies: the training forward routes every
// token exactly as generation did (routing_agreement 1, bitwise log-probs)
// under every recipe; FP8 generation with BF16 training measures the routing
// mismatch, and routing replay trains on the recorded experts; experts no
// token chose get no gradient; the load-balancing loss against its value
// for a uniform router; bad expert records are refused; a GRPO run learns.
// (Gradients against PyTorch float64 and finite differences:
// tests/oracle_torch/torch_moe_grads.py.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/context.h"
#include "core/model/model_params.h"
#include "core/rollout/rollout.h"
#include "core/train/trainer.h"
#include "trainer/trainer_test_support.h"

namespace fp8rl::test {
namespace {

rollout::SamplingOptions recording(int32_t max_new_tokens = 10) {
  rollout::SamplingOptions sampling = test_sampling(max_new_tokens);
  sampling.record_experts = true;
  return sampling;
}

// Fed tokens (length - 1 per sequence) times sparse layers times k: what
// the trainer compares, counted from the batch alone.
int64_t expected_choices(const RolloutBatch& batch, const model::ModelConfig& config) {
  const rollout::TokenSequences view = batch.sequences.view();
  int64_t fed = 0;
  for (int64_t i = 0; i < view.count; ++i) fed += view.length(i) - 1;
  return fed * model::sparse_layer_count(config) * config.moe.num_experts_per_tok;
}

model::ModelParams with_zero_router(model::ModelParams params) {
  for (model::LayerParams& layer : params.layers) std::fill(layer.router.data.begin(), layer.router.data.end(), 0.0f);
  return params;
}

// The gradients of one expert's three projections, by for_each_tensor name.
std::vector<float> expert_gradient(const model::ModelParams& params, const train::BatchGradients& g, size_t layer,
                                   size_t expert) {
  std::vector<float> all;
  size_t slot = 0;
  const std::string prefix =
      "model.layers." + std::to_string(layer) + ".mlp.experts." + std::to_string(expert) + ".";
  model::for_each_tensor(const_cast<model::ModelParams&>(params),
                         [&](const std::string& name, const std::vector<int64_t>&, model::HostTensor&) {
                           const std::vector<float>& grad = g.grads[slot++];
                           if (name.rfind(prefix, 0) == 0) all.insert(all.end(), grad.begin(), grad.end());
                         });
  return all;
}

bool all_zero(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; });
}

}  // namespace

TEST_CASE("MoE training routes every token as generation did, bit for bit, under every recipe") {
  Context context(cpu_request(2), Logger());
  for (const NamedConfig& named : {NamedConfig{"qwen3_moe", tiny_qwen3_moe()},
                                   NamedConfig{"qwen3_moe_all_experts", tiny_qwen3_moe_all_experts()}}) {
    for (const NamedRecipe& recipe : all_recipes()) {
      CAPTURE(std::string(named.name));
      CAPTURE(std::string(recipe.name));
      policy::Policy policy(context, tiny_params(named.config), recipe.recipe);
      policy.set_attention_scales(test_scales(named.config.num_layers));
      const RolloutBatch batch =
          generate_batch(policy, paired_prompts(named.config, {5, 9, 3}), seeds_from(3, 6), recording());
      REQUIRE(static_cast<int64_t>(batch.experts.size()) == expected_choices(batch, named.config));
      train::Trainer trainer(policy, test_options());
      CHECK(same_floats(trainer.gradients(batch.view()).logp, batch.logp_gen));
      const train::StepMetrics m = trainer.step(batch.view());
      CHECK(m.routing_choices == expected_choices(batch, named.config));
      CHECK(m.routing_agreement == 1.0);
      CHECK(m.mismatch.token_mult_prob_error == 1.0);
      CHECK(m.router_aux_loss > 0.0);
      CHECK_FALSE(m.skipped);
    }
  }
}

TEST_CASE("FP8 generation, BF16 training: routing_agreement is measured, and replay trains on the recorded experts") {
  const model::ModelConfig config = tiny_qwen3_moe();
  Context context(cpu_request(2), Logger());
  policy::Recipe fp8;
  fp8.linear = policy::Precision::fp8;
  fp8.kv_cache = policy::Precision::fp8;
  fp8.attention = policy::Precision::fp8;
  // A flat router makes routing margins small, so FP8's rounding flips choices.
  model::ModelParams params = tiny_params(config);
  for (model::LayerParams& layer : params.layers) {
    for (float& w : layer.router.data) w *= 0.05f;
  }
  policy::Policy generator(context, params, fp8);
  generator.set_attention_scales(test_scales(config.num_layers));
  policy::Policy learner(context, params);  // BF16, same weights
  const FlatSequences prompts = paired_prompts(config, {7, 11, 4, 9});
  const RolloutBatch fp8_batch = generate_batch(generator, prompts, seeds_from(5, 8), recording(14));

  train::TrainerOptions options = test_options();
  train::Trainer plain(learner, options);
  const train::StepMetrics measured = plain.step(fp8_batch.view());
  CHECK(measured.routing_choices == expected_choices(fp8_batch, config));
  CHECK(measured.routing_agreement < 1.0);  // some choices flipped
  CHECK(measured.routing_agreement > 0.5);

  SUBCASE("replaying the trainer's own choices changes nothing; replaying others' changes the gradients") {
    policy::Policy bf16(context, params);
    const RolloutBatch own = generate_batch(bf16, prompts, seeds_from(5, 8), recording(14));
    train::Trainer routed(bf16, options);
    const train::BatchGradients reference = routed.gradients(own.view());
    options.routing_replay = true;
    train::Trainer replayed(bf16, options);
    const train::BatchGradients same = replayed.gradients(own.view());
    CHECK(same_floats(same.logp, reference.logp));
    for (size_t t = 0; t < reference.grads.size(); ++t) CHECK(same_floats(same.grads[t], reference.grads[t]));

    RolloutBatch others = own;
    // Reversed, each pair of choices lands on another (token, layer): valid, distinct, mostly different.
    others.experts = std::vector<int32_t>(own.experts.rbegin(), own.experts.rend());
    const train::BatchGradients moved = replayed.gradients(others.view());
    CHECK_FALSE(same_floats(moved.logp, reference.logp));
  }
  SUBCASE("replay needs the recorded experts, and a record must name distinct experts of the model") {
    options.routing_replay = true;
    policy::Policy fresh(context, params);  // learner has taken a step
    train::Trainer replayed(fresh, options);
    RolloutBatch missing = fp8_batch;
    missing.experts.clear();
    CHECK_THROWS_WITH_AS(replayed.step(missing.view()), doctest::Contains("routing replay needs"),
                         Error);
    RolloutBatch bad = fp8_batch;
    bad.experts[5] = static_cast<int32_t>(config.moe.num_experts);
    CHECK_THROWS_WITH_AS(replayed.step(bad.view()), doctest::Contains("experts[5]"), Error);
    bad.experts = fp8_batch.experts;
    bad.experts[3] = bad.experts[2];
    CHECK_THROWS_WITH_AS(replayed.step(bad.view()), doctest::Contains("not a distinct expert"), Error);
    CHECK(replayed.steps() == 0);
    const train::StepMetrics m = replayed.step(fp8_batch.view());
    // The router's own choices, made on hidden states the replayed experts of earlier layers computed.
    CHECK(m.routing_choices == measured.routing_choices);
    CHECK((m.routing_agreement > 0.5 && m.routing_agreement < 1.0));
  }
}

TEST_CASE("MoE: experts no token chose get no gradient, and a uniform router's load-balancing loss is k") {
  const model::ModelConfig config = tiny_qwen3_moe();  // 6 experts, top 2, norm_topk_prob
  Context context(cpu_request(2), Logger());
  // A zero router ties every token onto experts 0 and 1 (lowest index wins).
  const model::ModelParams params = with_zero_router(tiny_params(config));
  for (const NamedRecipe& recipe : all_recipes()) {
    CAPTURE(std::string(recipe.name));
    policy::Policy policy(context, params, recipe.recipe);
    policy.set_attention_scales(test_scales(config.num_layers));
    const RolloutBatch batch = generate_batch(policy, paired_prompts(config, {5, 8}), seeds_from(1, 4), recording());
    train::Trainer trainer(policy, test_options());
    const train::BatchGradients g = trainer.gradients(batch.view());
    for (size_t layer = 0; layer < params.layers.size(); ++layer) {
      if (!model::is_sparse_layer(config, static_cast<int64_t>(layer))) continue;
      for (size_t e = 0; e < 6; ++e) {
        CAPTURE(layer);
        CAPTURE(e);
        CHECK(all_zero(expert_gradient(params, g, layer, e)) == (e >= 2));
      }
    }
    // Every probability is exactly 1/E, every choice is expert 0 or 1:
    // aux = E * sum_e (c_e / N) (1 / E) = k, and with a coefficient the loss grows by coef * k.
    const train::StepMetrics m = trainer.step(batch.view());
    CHECK(m.router_aux_loss == doctest::Approx(2.0).epsilon(1e-6));  // p = fl(1/6), not 1/6
    train::TrainerOptions weighted = test_options();
    weighted.router_aux_loss_coef = 0.25;
    policy::Policy fresh(context, params, recipe.recipe);
    fresh.set_attention_scales(test_scales(config.num_layers));
    train::Trainer with_aux(fresh, weighted);
    train::Trainer without_aux(fresh, test_options());
    const double plain_loss = without_aux.gradients(batch.view()).loss.loss;
    CHECK(with_aux.gradients(batch.view()).loss.loss == doctest::Approx(plain_loss + 0.25 * 2.0).epsilon(1e-6));
  }
}

TEST_CASE("GRPO on an MoE policy learns, in FP8 end to end") {
  const model::ModelConfig config = tiny_qwen3_moe();
  Context context(cpu_request(2), Logger());
  policy::Recipe fp8;
  fp8.linear = policy::Precision::fp8;
  fp8.kv_cache = policy::Precision::fp8;
  policy::Policy policy(context, tiny_params(config), fp8);
  policy.set_attention_scales(test_scales(config.num_layers));
  train::TrainerOptions options = test_options();
  options.schedule.base_lr = 3e-3;
  options.micro_batch_tokens = 2048;
  train::Trainer trainer(policy, options);
  const FlatSequences prompts = paired_prompts(config, {4, 6, 5, 7, 3, 8, 4, 6});
  std::vector<double> rewards;
  for (int iteration = 0; iteration < 30; ++iteration) {
    const RolloutBatch batch = generate_batch(policy, prompts, trainer.next_seeds(16), recording(8));
    const train::StepMetrics m = trainer.step(batch.view());
    CHECK(m.routing_agreement == 1.0);
    rewards.push_back(std::accumulate(batch.rewards.begin(), batch.rewards.end(), 0.0) / 16.0);
  }
  const double first = std::accumulate(rewards.begin(), rewards.begin() + 5, 0.0) / 5.0;
  const double last = std::accumulate(rewards.end() - 5, rewards.end(), 0.0) / 5.0;
  CAPTURE(first);
  CAPTURE(last);
  CHECK(last > first + 0.25);  // the share of low tokens, about 0.5 at random
}

}  // namespace fp8rl::test
