// Mixture-of-Experts routing: the per-token arithmetic against hand-computed
// cases (softmax, top-k, ties to the lower index, renormalisation, combine),
// and the forward pass's invariance when routing is extreme: every token
// tied onto the same experts (the others idle) or sharply peaked routers.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/policy/kv_cache.h"
#include "core/policy/model_runner.h"
#include "core/rollout/sequence_batch.h"
#include "kernels/common/moe_routing_math.h"
#include "policy_test_support.h"

namespace fp8rl::test {
namespace {

using rollout::Rollout;

// Softmax of hand-picked logits in float64, the oracle for route_token.
std::vector<double> softmax(const std::vector<float>& logits) {
  double max = logits[0], sum = 0.0;
  for (float l : logits) max = std::max(max, static_cast<double>(l));
  std::vector<double> p;
  for (float l : logits) p.push_back(std::exp(l - max));
  for (double v : p) sum += v;
  for (double& v : p) v /= sum;
  return p;
}

model::ModelParams with_router(model::ModelParams params, float scale) {
  for (model::LayerParams& layer : params.layers) {
    for (float& w : layer.router.data) w *= scale;
  }
  return params;
}

// Generation of a batch against each prompt alone and the batch reversed.
void check_batch_invariant(policy::Policy& policy) {
  const FlatSequences batch = test_prompts({6, 14, 3, 9, 21}, 301, 4);
  const std::vector<uint64_t> seeds = {5, 6, 7, 8, 9};
  rollout::SamplingOptions options;
  options.max_new_tokens = 8;
  const std::vector<Rollout> reference = rollout::generate(policy, batch.view(), seeds, options);
  const rollout::TokenSequences view = batch.view();
  FlatSequences reversed;
  std::vector<uint64_t> reversed_seeds;
  for (int64_t i = view.count - 1; i >= 0; --i) {
    reversed.add(std::vector<int32_t>(view.sequence(i), view.sequence(i) + view.length(i)));
    reversed_seeds.push_back(seeds[static_cast<size_t>(i)]);
  }
  const std::vector<Rollout> backwards = rollout::generate(policy, reversed.view(), reversed_seeds, options);
  for (int64_t i = 0; i < view.count; ++i) {
    FlatSequences alone;
    alone.add(std::vector<int32_t>(view.sequence(i), view.sequence(i) + view.length(i)));
    const Rollout single = rollout::generate(policy, alone.view(), {seeds[static_cast<size_t>(i)]}, options)[0];
    const Rollout& expected = reference[static_cast<size_t>(i)];
    for (const Rollout* other : {&single, &backwards[static_cast<size_t>(view.count - 1 - i)]}) {
      CHECK(other->tokens == expected.tokens);
      REQUIRE(other->logprobs.size() == expected.logprobs.size());
      for (size_t t = 0; t < expected.logprobs.size(); ++t) CHECK(same_bits(other->logprobs[t], expected.logprobs[t]));
    }
  }
}

std::vector<float> full_logits(policy::Policy& policy) {
  const FlatSequences sequences = test_prompts({7, 12}, 301, 5);
  return rollout::full_logits(policy, sequences.view());
}

// The experts one full-sequence pass (as scoring and training run it) routes
// each token of `sequence` to: [positions, sparse layers, k].
std::vector<int32_t> routed_in_one_pass(policy::Policy& policy, const std::vector<int32_t>& sequence) {
  const model::ModelConfig& config = policy.config();
  FlatSequences one;
  one.add(sequence);
  const policy::TokenBatch batch = rollout::sequence_batch(one.view(), 0, 1, true, rollout::LogitRows::none);
  policy::KvCache cache(policy.context().backend(), policy.compiled(), model::kv_dim(config),
                        static_cast<int64_t>(sequence.size()));
  const int64_t k = config.moe.num_experts_per_tok, sparse = model::sparse_layer_count(config);
  std::vector<int32_t> experts(sequence.size() * static_cast<size_t>(sparse * k));
  const policy::RoutingObserver routing = [&](size_t layer, int64_t first, int64_t tokens, const int32_t* chosen) {
    int64_t index = 0;  // the layer's index among the sparse layers
    for (size_t l = 0; l < layer; ++l) index += model::is_sparse_layer(config, static_cast<int64_t>(l));
    for (int64_t t = 0; t < tokens; ++t) {
      std::copy(chosen + t * k, chosen + (t + 1) * k, experts.begin() + ((first + t) * sparse + index) * k);
    }
  };
  policy.runner().run(
      policy.compiled(), policy.attention_scales(), batch, cache, policy::PassLimits{},
      [](int64_t, int64_t, const float*) {}, {}, nullptr, routing);
  return experts;
}

}  // namespace

TEST_CASE("recorded expert choices: the shape, zero-router ties, and scoring routes every token as generation did") {
  Context context(cpu_request(2), Logger());
  const FlatSequences prompts = test_prompts({5, 12, 1}, 301, 7);
  rollout::SamplingOptions options;
  options.max_new_tokens = 7;
  options.batch_slots = 2;  // continuous batching: the third prompt waits
  options.record_experts = true;
  for (const NamedConfig& named : {NamedConfig{"qwen3_moe", tiny_qwen3_moe()},
                                   NamedConfig{"qwen3_moe_all_experts", tiny_qwen3_moe_all_experts()}}) {
    for (const NamedRecipe& recipe : all_recipes()) {
      CAPTURE(std::string(named.name));
      CAPTURE(std::string(recipe.name));
      policy::Policy policy(context, with_router(tiny_params(named.config), 25.0f), recipe.recipe);
      policy.set_attention_scales(test_scales(named.config.num_layers));
      const std::vector<Rollout> rollouts = rollout::generate(policy, prompts.view(), {1, 2, 3}, options);
      const int64_t k = named.config.moe.num_experts_per_tok, sparse = model::sparse_layer_count(named.config);
      const rollout::TokenSequences view = prompts.view();
      for (int64_t i = 0; i < view.count; ++i) {
        const Rollout& r = rollouts[static_cast<size_t>(i)];
        std::vector<int32_t> fed(view.sequence(i), view.sequence(i) + view.length(i));
        fed.insert(fed.end(), r.tokens.begin(), r.tokens.end() - 1);  // the last token is never fed
        REQUIRE(r.experts.size() == fed.size() * static_cast<size_t>(sparse * k));
        for (size_t slot = 0; slot < r.experts.size(); slot += static_cast<size_t>(k)) {
          for (int64_t j = 0; j < k; ++j) {
            const int32_t e = r.experts[slot + static_cast<size_t>(j)];
            CHECK((e >= 0 && e < named.config.moe.num_experts));
            for (int64_t other = 0; other < j; ++other) CHECK(r.experts[slot + static_cast<size_t>(other)] != e);
          }
        }
        CHECK(routed_in_one_pass(policy, fed) == r.experts);
      }
    }
  }
  policy::Policy tied(context, with_router(tiny_params(tiny_qwen3_moe()), 0.0f));
  const std::vector<Rollout> rollouts = rollout::generate(tied, prompts.view(), {1, 2, 3}, options);
  for (const Rollout& r : rollouts) {
    for (size_t slot = 0; slot < r.experts.size(); slot += 2) {
      CHECK(r.experts[slot] == 0);
      CHECK(r.experts[slot + 1] == 1);
    }
  }
  options.record_experts = false;
  CHECK(rollout::generate(tied, prompts.view(), {1, 2, 3}, options)[0].experts.empty());
}

TEST_CASE("route_token: softmax, top-k best first, renormalisation, against float64") {
  const std::vector<float> logits = {0.3f, -1.2f, 2.5f, 0.9f, 2.4f, -0.1f};
  const std::vector<double> p = softmax(logits);
  int32_t chosen[3];
  float weights[3];
  route_token(logits.data(), 6, 3, false, chosen, weights);
  CHECK(chosen[0] == 2);
  CHECK(chosen[1] == 4);
  CHECK(chosen[2] == 3);
  for (int j = 0; j < 3; ++j) CHECK(weights[j] == doctest::Approx(p[static_cast<size_t>(chosen[j])]).epsilon(1e-6));
  route_token(logits.data(), 6, 3, true, chosen, weights);
  const double kept = p[2] + p[4] + p[3];
  for (int j = 0; j < 3; ++j)
    CHECK(weights[j] == doctest::Approx(p[static_cast<size_t>(chosen[j])] / kept).epsilon(1e-6));
  CHECK(weights[0] + weights[1] + weights[2] == doctest::Approx(1.0).epsilon(1e-6));
}

TEST_CASE("route_token: equal probabilities go to the lower expert index, and NaN never wins a slot") {
  const std::vector<float> tied = {1.0f, 3.0f, 1.0f, 3.0f, 3.0f};
  int32_t chosen[4];
  float weights[4];
  route_token(tied.data(), 5, 4, false, chosen, weights);
  CHECK(chosen[0] == 1);
  CHECK(chosen[1] == 3);
  CHECK(chosen[2] == 4);
  CHECK(chosen[3] == 0);
  const std::vector<float> zeros(8, 0.0f);
  route_token(zeros.data(), 8, 2, true, chosen, weights);
  CHECK(chosen[0] == 0);
  CHECK(chosen[1] == 1);
  CHECK(weights[0] == 0.5f);
  CHECK(weights[1] == 0.5f);
  const std::vector<float> with_nan = {std::numeric_limits<float>::quiet_NaN(), 1.0f, 2.0f};
  route_token(with_nan.data(), 3, 3, false, chosen, weights);
  for (int j = 0; j < 3; ++j) CHECK((chosen[j] >= 0 && chosen[j] < 3));
}

TEST_CASE("combine_value sums the slots in order, weighted, from +0") {
  const std::vector<float> expert_out = {1.0f, 2.0f, 10.0f, 20.0f, 100.0f, 200.0f};  // [3 rows, 2]
  const int64_t slots[] = {2, 0};
  const float weights[] = {0.25f, 0.5f};
  CHECK(combine_value(expert_out.data(), slots, weights, 2, 2, 0) == 0.25f * 100.0f + 0.5f * 1.0f);
  CHECK(combine_value(expert_out.data(), slots, weights, 2, 2, 1) == 0.25f * 200.0f + 0.5f * 2.0f);
}

TEST_CASE("a zero router ties every token onto experts 0 and 1: the idle experts change nothing") {
  Context context(cpu_request(2), Logger());
  const model::ModelParams tied = with_router(tiny_params(tiny_qwen3_moe()), 0.0f);
  for (const NamedRecipe& recipe : all_recipes()) {
    CAPTURE(std::string(recipe.name));
    policy::Policy policy(context, tied, recipe.recipe);
    policy.set_attention_scales(test_scales(tied.config.num_layers));
    const std::vector<float> reference = full_logits(policy);

    model::ModelParams idle_changed = tied, used_changed = tied;
    for (model::LayerParams& layer : idle_changed.layers) {
      for (size_t e = 2; e < layer.experts.size(); ++e) {
        for (float& w : layer.experts[e].down_proj.data) w = -w;
      }
    }
    for (model::LayerParams& layer : used_changed.layers) {
      if (!layer.experts.empty()) {
        for (float& w : layer.experts[1].down_proj.data) w = -w;
      }
    }
    policy::Policy idle(context, idle_changed, recipe.recipe);
    idle.set_attention_scales(test_scales(tied.config.num_layers));
    policy::Policy used(context, used_changed, recipe.recipe);
    used.set_attention_scales(test_scales(tied.config.num_layers));
    const std::vector<float> idle_logits = full_logits(idle), used_logits = full_logits(used);
    int64_t idle_differences = 0, used_differences = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
      idle_differences += !same_bits(reference[i], idle_logits[i]);
      used_differences += !same_bits(reference[i], used_logits[i]);
    }
    CHECK(idle_differences == 0);
    CHECK(used_differences > static_cast<int64_t>(reference.size()) / 2);
    check_batch_invariant(policy);
  }
}

TEST_CASE("sharply peaked routers: generation is batch- and order-invariant") {
  Context context(cpu_request(3), Logger());
  for (const NamedConfig& named : {NamedConfig{"qwen3_moe", tiny_qwen3_moe()},
                                   NamedConfig{"qwen3_moe_all_experts", tiny_qwen3_moe_all_experts()}}) {
    const model::ModelParams peaked = with_router(tiny_params(named.config), 25.0f);
    for (const NamedRecipe& recipe : all_recipes()) {
      CAPTURE(std::string(named.name));
      CAPTURE(std::string(recipe.name));
      policy::Policy policy(context, peaked, recipe.recipe);
      policy.set_attention_scales(test_scales(peaked.config.num_layers));
      check_batch_invariant(policy);
    }
  }
}

}  // namespace fp8rl::test
