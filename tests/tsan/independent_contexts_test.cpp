// Several contexts at once, one per thread, each living a whole short life:
// create, generate, train a step, save the policy and the trainer state into
// its own folder, load both back, train on, destroy. Distinct handles are
// independent (fp8rl.h), so every thread must see exactly what a lone run
// sees: the resumed trainer's step equals the original's bit for bit.
#include "tsan/concurrency_support.h"

namespace tsan_test {
namespace {

constexpr int kThreads = 3;

fp8rl_trainer_options trainer_options() {
  fp8rl_trainer_options options;
  fp8rl_trainer_options_init(&options);
  options.learning_rate = 1e-3;
  options.group_size = 3;  // the three prompts form one group
  options.importance.mode = FP8RL_IMPORTANCE_TRUNCATED;
  options.micro_batch_tokens = 16;  // more than one micro-batch
  return options;
}

// Reward: the fraction of even completion tokens of each sequence.
std::vector<float> rewards_of(const Sequences& sequences) {
  std::vector<float> rewards;
  for (size_t i = 0; i < sequences.prompt_lengths.size(); ++i) {
    const int64_t begin = sequences.offsets[i] + sequences.prompt_lengths[i], end = sequences.offsets[i + 1];
    int64_t even = 0;
    for (int64_t t = begin; t < end; ++t) even += sequences.tokens[static_cast<size_t>(t)] % 2 == 0 ? 1 : 0;
    rewards.push_back(end > begin ? static_cast<float>(even) / static_cast<float>(end - begin) : 0.0f);
  }
  return rewards;
}

// One trainer step on `sequences`; metrics.step stays 0 on failure.
fp8rl_train_metrics step(fp8rl_trainer* trainer, const Sequences& sequences, Failures& failures) {
  const std::vector<float> rewards = rewards_of(sequences);
  fp8rl_train_batch batch;
  fp8rl_train_batch_init(&batch);
  batch.tokens = sequences.tokens.data();
  batch.offsets = sequences.offsets.data();
  batch.num_sequences = static_cast<int64_t>(sequences.prompt_lengths.size());
  batch.prompt_lengths = sequences.prompt_lengths.data();
  batch.num_completion_tokens = static_cast<int64_t>(sequences.logprobs.size());
  batch.logp_gen = sequences.logprobs.data();
  batch.rewards = rewards.data();
  fp8rl_train_metrics metrics;
  fp8rl_train_metrics_init(&metrics);
  expect_ok(fp8rl_trainer_step(trainer, &batch, &metrics), "fp8rl_trainer_step", failures);
  return metrics;
}

// Prompts seeded from the trainer's seed stream.
Prompts next_prompts(fp8rl_trainer* trainer, Failures& failures) {
  Prompts prompts(0);
  expect_ok(fp8rl_trainer_next_seeds(trainer, prompts.count(), prompts.seeds.data()), "fp8rl_trainer_next_seeds",
            failures);
  return prompts;
}

// The life of one context; `folder` is this thread's own.
void train_save_load(int index, const std::string& folder, Failures& failures) {
  std::filesystem::create_directories(folder);
  fp8rl_context* context = create_context(failures);
  if (context == nullptr) return;
  fp8rl_policy* policy = create_policy(context, 40 + index, failures);
  const fp8rl_recipe recipe = index % 2 == 0 ? fp8_recipe() : default_recipe();
  const fp8rl_trainer_options options = trainer_options();
  fp8rl_trainer* trainer = nullptr;
  if (policy != nullptr && expect_ok(fp8rl_policy_set_recipe(policy, &recipe), "fp8rl_policy_set_recipe", failures) &&
      expect_ok(fp8rl_trainer_create(policy, &options, &trainer), "fp8rl_trainer_create", failures)) {
    const fp8rl_train_metrics first =
        step(trainer, generate(policy, next_prompts(trainer, failures), failures), failures);
    if (first.step != 1) failures.push_back("the first step did not count");
    const std::string policy_folder = folder + "/policy", state = folder + "/state.safetensors";
    expect_ok(fp8rl_policy_save(policy, policy_folder.c_str(), FP8RL_DTYPE_F32), "fp8rl_policy_save", failures);
    expect_ok(fp8rl_trainer_save_state(trainer, state.c_str()), "fp8rl_trainer_save_state", failures);
    const Sequences next = generate(policy, next_prompts(trainer, failures), failures);
    const fp8rl_train_metrics expected = step(trainer, next, failures);

    fp8rl_policy* loaded = nullptr;
    fp8rl_trainer* resumed = nullptr;
    if (expect_ok(fp8rl_policy_load(context, policy_folder.c_str(), &loaded), "fp8rl_policy_load", failures) &&
        expect_ok(fp8rl_trainer_create(loaded, &options, &resumed), "fp8rl_trainer_create (resumed)", failures) &&
        expect_ok(fp8rl_trainer_load_state(resumed, state.c_str()), "fp8rl_trainer_load_state", failures)) {
      const fp8rl_train_metrics got = step(resumed, next, failures);
      if (got.step != expected.step || got.loss != expected.loss || got.grad_norm != expected.grad_norm)
        failures.push_back("the resumed step differs from the original's");
    }
    fp8rl_trainer_destroy(resumed);
    fp8rl_policy_destroy(loaded);
  }
  fp8rl_trainer_destroy(trainer);
  fp8rl_policy_destroy(policy);
  expect_ok(fp8rl_context_destroy(context), "fp8rl_context_destroy", failures);
}

}  // namespace

TEST_CASE("contexts on several threads: create, train, save, load, resume and destroy concurrently") {
  const TempFolder root("contexts");
  run_concurrently(kThreads, [&](int i, Failures& failures) {
    train_save_load(i, root.path("thread" + std::to_string(i)), failures);
  });
}

TEST_CASE("contexts created and destroyed concurrently, with and without policies") {
  run_concurrently(kThreads, [&](int i, Failures& failures) {
    for (int round = 0; round < 4; ++round) {
      fp8rl_context* context = create_context(failures);
      if (context == nullptr) return;
      if ((round + i) % 2 == 0) fp8rl_policy_destroy(create_policy(context, 1 + round, failures));
      expect_ok(fp8rl_context_destroy(context), "fp8rl_context_destroy", failures);
    }
  });
}

}  // namespace tsan_test
