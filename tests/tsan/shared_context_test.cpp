// One context used by several threads at once, as fp8rl.h allows: "calls on
// a policy are serialized by that context (so one context with its policies
// may be shared by threads)". Each thread's results must equal, bit for bit,
// what the same calls give on one thread: serialization may reorder calls
// but must not change what any call computes.
#include "tsan/concurrency_support.h"

namespace tsan_test {
namespace {

constexpr int kThreads = 4;
constexpr int kRounds = 3;

// A context and its policies, destroyed policies first at scope exit.
struct SharedContext {
  Failures failures;
  fp8rl_context* context = create_context(failures);
  std::vector<fp8rl_policy*> policies;

  ~SharedContext() {
    for (fp8rl_policy* policy : policies) fp8rl_policy_destroy(policy);
    fp8rl_context_destroy(context);
  }
  fp8rl_policy* add_policy(uint64_t seed, const fp8rl_recipe& recipe) {
    fp8rl_policy* policy = create_policy(context, seed, failures);
    if (policy == nullptr) return nullptr;
    policies.push_back(policy);
    expect_ok(fp8rl_policy_set_recipe(policy, &recipe), "fp8rl_policy_set_recipe", failures);
    return policy;
  }
};

// Generates and scores `rounds` times, comparing with `expected`.
void generate_and_score(fp8rl_policy* policy, const Prompts& prompts, const Sequences& expected, Failures& failures) {
  for (int round = 0; round < kRounds; ++round) {
    const Sequences got = generate(policy, prompts, failures);
    if (!(got == expected)) failures.push_back("generation differs from the one-thread run");
    if (!same_bits(score(policy, got, failures), got.logprobs))
      failures.push_back("scored log-probs differ from the generator's");
  }
}

}  // namespace

TEST_CASE("one context, a policy per thread: concurrent generate and score give the one-thread results") {
  SharedContext shared;
  std::vector<fp8rl_policy*> policies;
  std::vector<Sequences> expected;
  for (int i = 0; i < kThreads; ++i) {
    policies.push_back(shared.add_policy(100 + i, i % 2 == 0 ? fp8_recipe() : default_recipe()));
    expected.push_back(generate(policies.back(), Prompts(i), shared.failures));
  }
  REQUIRE(shared.failures.empty());

  run_concurrently(kThreads, [&](int i, Failures& failures) {
    generate_and_score(policies[static_cast<size_t>(i)], Prompts(i), expected[static_cast<size_t>(i)], failures);
  });
}

TEST_CASE("one policy shared by threads: generate, score, queries, recipe and save run concurrently") {
  SharedContext shared;
  const fp8rl_recipe recipe = fp8_recipe();
  fp8rl_policy* policy = shared.add_policy(7, recipe);
  std::vector<Sequences> expected;
  for (int i = 0; i < kThreads; ++i) expected.push_back(generate(policy, Prompts(i), shared.failures));
  REQUIRE(shared.failures.empty());
  const TempFolder folder("shared_policy");

  run_concurrently(kThreads + 1, [&](int i, Failures& failures) {
    if (i < kThreads) return generate_and_score(policy, Prompts(i), expected[static_cast<size_t>(i)], failures);
    // The extra thread reads and re-sets the recipe (the same one, so results
    // stay comparable), reads the config and memory, and saves the weights.
    for (int round = 0; round < kRounds; ++round) {
      fp8rl_recipe got = default_recipe();
      expect_ok(fp8rl_policy_get_recipe(policy, &got), "fp8rl_policy_get_recipe", failures);
      if (got.linear != recipe.linear) failures.push_back("the recipe read back differs");
      expect_ok(fp8rl_policy_set_recipe(policy, &recipe), "fp8rl_policy_set_recipe", failures);
      fp8rl_model_config config;
      fp8rl_model_config_init(&config);
      expect_ok(fp8rl_policy_get_config(policy, &config), "fp8rl_policy_get_config", failures);
      if (config.hidden_size != tiny_config().hidden_size) failures.push_back("the config read back differs");
      fp8rl_memory_report memory;
      fp8rl_memory_report_init(&memory);
      expect_ok(fp8rl_policy_memory(policy, &memory), "fp8rl_policy_memory", failures);
      expect_ok(fp8rl_policy_save(policy, folder.path().c_str(), FP8RL_DTYPE_F32), "fp8rl_policy_save", failures);
    }
  });

  // What was saved mid-generation is the policy (generation does not change weights).
  fp8rl_policy* loaded = nullptr;
  REQUIRE(fp8rl_policy_load(shared.context, folder.path().c_str(), &loaded) == FP8RL_OK);
  shared.policies.push_back(loaded);
  REQUIRE(fp8rl_policy_set_recipe(loaded, &recipe) == FP8RL_OK);
  CHECK(same_bits(score(loaded, expected[0], shared.failures), expected[0].logprobs));
  CHECK(shared.failures.empty());
}

}  // namespace tsan_test
