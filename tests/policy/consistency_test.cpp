// Bitwise consistency: the logits and log-probs generation records equal
// those of a full-sequence forward pass (what training computes), for every
// family (Mixture-of-Experts too) and recipe, whatever the batch composition
// and thread count.
#include <doctest/doctest.h>

#include <map>
#include <utility>

#include "policy_test_support.h"

namespace fp8rl::test {
namespace {

using rollout::Rollout;

struct Recorded {
  std::vector<Rollout> rollouts;
  std::map<std::pair<int64_t, int64_t>, std::vector<float>> logits;  // (request, step) -> [vocab]
};

Recorded generate_recording(policy::Policy& policy, const FlatSequences& prompts,
                            const rollout::SamplingOptions& options, const std::vector<uint64_t>& seeds) {
  Recorded recorded;
  recorded.rollouts = rollout::generate(policy, prompts.view(), seeds, options,
                                        [&](int64_t request, int64_t step, const float* logits, int64_t vocab) {
                                          recorded.logits[{request, step}].assign(logits, logits + vocab);
                                        });
  return recorded;
}

// prompt + completion of each request, and the prompt lengths.
std::pair<FlatSequences, std::vector<int64_t>> whole_sequences(const FlatSequences& prompts,
                                                               const std::vector<Rollout>& rollouts) {
  FlatSequences whole;
  std::vector<int64_t> prompt_lengths;
  const rollout::TokenSequences view = prompts.view();
  for (int64_t i = 0; i < view.count; ++i) {
    std::vector<int32_t> sequence(view.sequence(i), view.sequence(i) + view.length(i));
    const Rollout& r = rollouts[static_cast<size_t>(i)];
    sequence.insert(sequence.end(), r.tokens.begin(), r.tokens.end());
    whole.add(sequence);
    prompt_lengths.push_back(view.length(i));
  }
  return {whole, prompt_lengths};
}

int64_t count_mismatches(const std::vector<float>& a, const float* b, size_t n) {
  int64_t mismatches = 0;
  for (size_t i = 0; i < n; ++i) mismatches += same_bits(a[i], b[i]) ? 0 : 1;
  return mismatches;
}

std::vector<uint64_t> seeds_for(int64_t count) {
  std::vector<uint64_t> seeds;
  for (int64_t i = 0; i < count; ++i) seeds.push_back(1000 + 7 * static_cast<uint64_t>(i));
  return seeds;
}

}  // namespace

TEST_CASE("decode logits equal full-forward logits bitwise, every family and recipe") {
  Context context(cpu_request(2), Logger());
  const FlatSequences prompts = test_prompts({5, 1, 17, 9}, 301);
  rollout::SamplingOptions options;
  options.max_new_tokens = 12;
  options.batch_slots = 3;  // continuous batching: the fourth prompt waits for a slot
  for (const NamedConfig& named : forward_configs()) {
    policy::Policy policy(context, tiny_params(named.config));
    policy.set_attention_scales(test_scales(named.config.num_layers));
    for (const NamedRecipe& recipe : all_recipes()) {
      CAPTURE(std::string(named.name));
      CAPTURE(std::string(recipe.name));
      policy.set_recipe(recipe.recipe);
      const Recorded recorded = generate_recording(policy, prompts, options, seeds_for(4));
      const auto [whole, prompt_lengths] = whole_sequences(prompts, recorded.rollouts);
      const std::vector<float> full = rollout::full_logits(policy, whole.view());
      const int64_t vocab = named.config.vocab_size;
      int64_t mismatches = 0, compared = 0;
      for (const auto& [key, logits] : recorded.logits) {
        const auto [request, step] = key;
        // The logits of completion token `step` are those at position prompt_length - 1 + step.
        const int64_t row =
            whole.offsets[static_cast<size_t>(request)] + prompt_lengths[static_cast<size_t>(request)] - 1 + step;
        mismatches += count_mismatches(logits, full.data() + row * vocab, static_cast<size_t>(vocab));
        compared += vocab;
      }
      size_t completion_tokens = 0;
      for (const Rollout& r : recorded.rollouts) completion_tokens += r.tokens.size();
      CHECK(recorded.logits.size() == completion_tokens);
      CHECK(compared == static_cast<int64_t>(completion_tokens) * vocab);
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("generation log-probs equal full-sequence scoring bitwise under every sampling setting") {
  Context context(cpu_request(2), Logger());
  const FlatSequences prompts = test_prompts({3, 11, 6}, 301, 1);
  struct Setting {
    const char* name;
    float temperature;
    int32_t top_k;
    float top_p;
  };
  const Setting settings[] = {{"plain", 1.0f, 0, 1.0f}, {"hot", 1.7f, 0, 1.0f},          {"top-k", 0.7f, 20, 1.0f},
                              {"top-p", 0.9f, 0, 0.8f}, {"top-k+top-p", 0.6f, 40, 0.9f}, {"greedy", 0.0f, 0, 1.0f}};
  for (const NamedConfig& named : forward_configs()) {
    policy::Policy policy(context, tiny_params(named.config, 5));
    policy.set_attention_scales(test_scales(named.config.num_layers));
    for (const NamedRecipe& recipe : all_recipes()) {
      policy.set_recipe(recipe.recipe);
      for (const Setting& setting : settings) {
        CAPTURE(std::string(named.name));
        CAPTURE(std::string(recipe.name));
        CAPTURE(std::string(setting.name));
        rollout::SamplingOptions options;
        options.temperature = setting.temperature;
        options.top_k = setting.top_k;
        options.top_p = setting.top_p;
        options.max_new_tokens = 10;
        const std::vector<Rollout> rollouts = rollout::generate(policy, prompts.view(), seeds_for(3), options);
        const auto [whole, prompt_lengths] = whole_sequences(prompts, rollouts);
        const std::vector<float> scored = rollout::score_completions(policy, whole.view(), prompt_lengths, options);
        std::vector<float> generated;
        for (const Rollout& r : rollouts) {
          generated.insert(generated.end(), r.logprobs.begin(), r.logprobs.end());
          for (float logprob : r.logprobs) CHECK(logprob <= 0.0f);
        }
        REQUIRE(scored.size() == generated.size());
        CHECK(count_mismatches(generated, scored.data(), scored.size()) == 0);
      }
    }
  }
}

TEST_CASE("rollouts are bitwise independent of the thread count") {
  const FlatSequences prompts = test_prompts({4, 13, 2, 8, 30}, 301, 2);
  rollout::SamplingOptions options;
  options.max_new_tokens = 9;
  for (const NamedConfig& named : {NamedConfig{"qwen3", tiny_qwen3()}, NamedConfig{"qwen3_moe", tiny_qwen3_moe()}}) {
    for (const NamedRecipe& recipe : all_recipes()) {
      CAPTURE(std::string(named.name));
      CAPTURE(std::string(recipe.name));
      std::vector<std::vector<Rollout>> results;
      for (int threads : {1, 2, 3}) {
        Context context(cpu_request(threads), Logger());
        policy::Policy policy(context, tiny_params(named.config), recipe.recipe);
        results.push_back(rollout::generate(policy, prompts.view(), seeds_for(5), options));
      }
      for (size_t t = 1; t < results.size(); ++t) {
        for (size_t i = 0; i < results[0].size(); ++i) {
          CHECK(results[0][i].tokens == results[t][i].tokens);
          CHECK(count_mismatches(results[0][i].logprobs, results[t][i].logprobs.data(),
                                 results[0][i].logprobs.size()) == 0);
        }
      }
    }
  }
}

}  // namespace fp8rl::test
