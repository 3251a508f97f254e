// The rollout engine: seeds decide completions whatever the batch looks
// like, continuous batching, chunked prefill, stop conditions and errors.
#include <doctest/doctest.h>

#include <cmath>

#include "policy_test_support.h"

namespace fp8rl::test {
namespace {

using rollout::FinishReason;
using rollout::Rollout;

void check_same(const Rollout& a, const Rollout& b) {
  CHECK(a.tokens == b.tokens);
  CHECK(a.finish == b.finish);
  REQUIRE(a.logprobs.size() == b.logprobs.size());
  for (size_t i = 0; i < a.logprobs.size(); ++i) CHECK(same_bits(a.logprobs[i], b.logprobs[i]));
}

policy::Recipe fp8_kv_attention() {
  policy::Recipe recipe;
  recipe.linear = policy::Precision::fp8;
  recipe.kv_cache = policy::Precision::fp8;
  recipe.attention = policy::Precision::fp8;
  return recipe;
}

}  // namespace

TEST_CASE("a seed gives the same completion whatever the batch composition") {
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(tiny_llama()), fp8_kv_attention());
  const FlatSequences batch = test_prompts({6, 14, 3, 9, 21, 2}, 301, 3);
  const std::vector<uint64_t> seeds = {5, 6, 7, 8, 9, 10};
  rollout::SamplingOptions options;
  options.max_new_tokens = 11;
  options.temperature = 0.9f;
  options.top_p = 0.95f;
  const std::vector<Rollout> reference = rollout::generate(policy, batch.view(), seeds, options);

  SUBCASE("each prompt alone") {
    const rollout::TokenSequences view = batch.view();
    for (int64_t i = 0; i < view.count; ++i) {
      FlatSequences alone;
      alone.add(std::vector<int32_t>(view.sequence(i), view.sequence(i) + view.length(i)));
      check_same(rollout::generate(policy, alone.view(), {seeds[static_cast<size_t>(i)]}, options)[0],
                 reference[static_cast<size_t>(i)]);
    }
  }
  SUBCASE("fewer slots than prompts, and prefill chunked into 4-token passes") {
    for (int32_t slots : {1, 2, 4}) {
      rollout::SamplingOptions constrained = options;
      constrained.batch_slots = slots;
      constrained.max_tokens_per_step = 4;
      const std::vector<Rollout> result = rollout::generate(policy, batch.view(), seeds, constrained);
      for (size_t i = 0; i < result.size(); ++i) check_same(result[i], reference[i]);
    }
  }
  SUBCASE("in another order, next to other prompts") {
    FlatSequences shuffled = test_prompts({40}, 301, 9);
    const rollout::TokenSequences view = batch.view();
    std::vector<uint64_t> shuffled_seeds = {99};
    for (int64_t i = view.count - 1; i >= 0; --i) {
      shuffled.add(std::vector<int32_t>(view.sequence(i), view.sequence(i) + view.length(i)));
      shuffled_seeds.push_back(seeds[static_cast<size_t>(i)]);
    }
    const std::vector<Rollout> result = rollout::generate(policy, shuffled.view(), shuffled_seeds, options);
    for (int64_t i = 0; i < view.count; ++i) {
      check_same(result[static_cast<size_t>(view.count - i)], reference[static_cast<size_t>(i)]);
    }
  }
  SUBCASE("different seeds give different completions") {
    const std::vector<Rollout> other = rollout::generate(policy, batch.view(), {50, 51, 52, 53, 54, 55}, options);
    int differing = 0;
    for (size_t i = 0; i < other.size(); ++i) differing += other[i].tokens != reference[i].tokens;
    CHECK(differing >= 4);
  }
}

TEST_CASE("finish reasons: length, stop tokens and a full context") {
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(tiny_qwen2()));
  const FlatSequences prompt = test_prompts({10}, 301, 4);
  rollout::SamplingOptions options;
  options.temperature = 0.0f;
  options.max_new_tokens = 8;
  options.stop_at_eos = false;
  const Rollout greedy = rollout::generate(policy, prompt.view(), {1}, options)[0];
  CHECK(greedy.finish == FinishReason::length);
  CHECK(greedy.tokens.size() == 8);
  for (float logprob : greedy.logprobs) CHECK(logprob == 0.0f);  // greedy: a point mass

  SUBCASE("a stop token ends the completion and is its last token") {
    options.stop_token_ids = {greedy.tokens[3]};
    const Rollout stopped = rollout::generate(policy, prompt.view(), {1}, options)[0];
    CHECK(stopped.finish == FinishReason::stop);
    size_t first = 0;
    while (greedy.tokens[first] != greedy.tokens[3]) ++first;
    CHECK(stopped.tokens == std::vector<int32_t>(greedy.tokens.begin(), greedy.tokens.begin() + first + 1));
  }
  SUBCASE("EOS from the config stops when stop_at_eos") {
    model::ModelParams params = tiny_params(tiny_qwen2());
    params.config.eos_token_ids = {greedy.tokens[0]};
    policy::Policy eos_policy(context, std::move(params));
    options.stop_at_eos = true;
    const Rollout stopped = rollout::generate(eos_policy, prompt.view(), {1}, options)[0];
    CHECK(stopped.finish == FinishReason::stop);
    CHECK(stopped.tokens.size() == 1);
  }
  SUBCASE("the context limit") {
    // max_position_embeddings 96: a 90-token prompt feeds positions 0..89; the
    // k-th new token would be fed at position 89 + k, so the 7th is the last.
    const FlatSequences long_prompt = test_prompts({90}, 301, 5);
    options.max_new_tokens = 50;
    const Rollout full = rollout::generate(policy, long_prompt.view(), {1}, options)[0];
    CHECK(full.finish == FinishReason::context_full);
    CHECK(full.tokens.size() == 7);
    // 97 tokens for 96 positions: scoring accepts it, as the last one is never fed.
    FlatSequences whole;
    std::vector<int32_t> sequence(long_prompt.tokens);
    sequence.insert(sequence.end(), full.tokens.begin(), full.tokens.end());
    whole.add(sequence);
    const std::vector<float> scored = rollout::score_completions(policy, whole.view(), {90}, options);
    REQUIRE(scored.size() == 7);
    for (size_t i = 0; i < 7; ++i) CHECK(same_bits(scored[i], full.logprobs[i]));
    const FlatSequences exact = test_prompts({96}, 301, 6);
    const Rollout one = rollout::generate(policy, exact.view(), {1}, options)[0];
    CHECK(one.finish == FinishReason::context_full);
    CHECK(one.tokens.size() == 1);
  }
}

TEST_CASE("generation rejects bad input and keeps the policy usable") {
  Context context(cpu_request(1), Logger());
  policy::Policy policy(context, tiny_params(tiny_llama()));
  rollout::SamplingOptions options;
  options.max_new_tokens = 2;
  auto status_of = [&](const FlatSequences& prompts, std::vector<uint64_t> seeds, const rollout::SamplingOptions& o) {
    try {
      rollout::generate(policy, prompts.view(), seeds, o);
    } catch (const Error& error) {
      CHECK(std::string(error.what()).size() > 10);
      return error.status();
    }
    return Status::ok;
  };
  FlatSequences out_of_range;
  out_of_range.add({1, 2, 301});
  CHECK(status_of(out_of_range, {1}, options) == Status::invalid_argument);
  FlatSequences negative;
  negative.add({-1});
  CHECK(status_of(negative, {1}, options) == Status::invalid_argument);
  FlatSequences too_long = test_prompts({97}, 301);
  CHECK(status_of(too_long, {1}, options) == Status::invalid_argument);
  const FlatSequences fine = test_prompts({3, 4}, 301);
  CHECK(status_of(fine, {1}, options) == Status::invalid_argument);  // one seed for two prompts
  rollout::SamplingOptions bad = options;
  bad.temperature = NAN;
  CHECK(status_of(fine, {1, 2}, bad) == Status::invalid_argument);
  bad = options;
  bad.top_p = 0.0f;
  CHECK(status_of(fine, {1, 2}, bad) == Status::invalid_argument);
  bad = options;
  bad.stop_token_ids = {400};
  CHECK(status_of(fine, {1, 2}, bad) == Status::invalid_argument);
  bad = options;
  bad.max_new_tokens = 0;
  CHECK(status_of(fine, {1, 2}, bad) == Status::invalid_argument);
  CHECK(status_of(fine, {1, 2}, options) == Status::ok);
}

TEST_CASE("recipes: invalid ones are refused without losing the current one, FP8 changes the numbers a little") {
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(tiny_llama()));
  const FlatSequences sequences = test_prompts({12, 7}, 301, 7);
  const std::vector<float> bf16 = rollout::full_logits(policy, sequences.view());
  policy::Recipe bad;
  bad.attention = policy::Precision::fp8;  // over a BF16 cache
  CHECK_THROWS_AS(policy.set_recipe(bad), Error);
  CHECK(policy.recipe() == policy::Recipe{});
  CHECK(rollout::full_logits(policy, sequences.view()) == bf16);

  policy.set_recipe(fp8_kv_attention());
  const std::vector<float> fp8 = rollout::full_logits(policy, sequences.view());
  double max_difference = 0.0, max_logit = 0.0;
  for (size_t i = 0; i < bf16.size(); ++i) {
    max_difference = std::max(max_difference, std::fabs(static_cast<double>(fp8[i]) - bf16[i]));
    max_logit = std::max(max_logit, std::fabs(static_cast<double>(bf16[i])));
  }
  CHECK(max_difference > 0.0);
  CHECK(max_difference < 0.25 * max_logit);

  policy::AttentionScales wrong = test_scales(2);  // the model has 3 layers
  CHECK_THROWS_AS(policy.set_attention_scales(wrong), Error);
  wrong = test_scales(3);
  wrong.k[1] = 0.0f;
  CHECK_THROWS_AS(policy.set_attention_scales(wrong), Error);
  wrong.k[1] = NAN;
  CHECK_THROWS_AS(policy.set_attention_scales(wrong), Error);
  CHECK(policy.attention_scales().k == std::vector<float>(3, 1.0f));
}

}  // namespace fp8rl::test
