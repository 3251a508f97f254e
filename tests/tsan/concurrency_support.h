// Helpers for the concurrency tests: threads that report instead of assert,
// and handles that work off the main thread. Uses only the public header.
//
// doctest's REQUIRE throws, and an exception escaping a std::thread ends the
// process, so worker threads record what went wrong as text and the test
// case checks those records on its own thread after joining.
#pragma once

#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace tsan_test {

// What one worker thread found wrong, in order; empty when all went well.
using Failures = std::vector<std::string>;

// Records a failed call with the thread's own last-error message.
inline bool expect_ok(fp8rl_status status, const char* what, Failures& failures) {
  if (status == FP8RL_OK) return true;
  failures.push_back(std::string(what) + ": " + fp8rl_status_name(status) + ": " + fp8rl_last_error_message());
  return false;
}

// Runs work(0) .. work(count - 1) on their own threads, all released together
// so their calls overlap, and CHECKs every thread's failures after the join.
inline void run_concurrently(int count, const std::function<void(int, Failures&)>& work) {
  std::vector<Failures> failures(static_cast<size_t>(count));
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) threads.emplace_back([&, i] { work(i, failures[static_cast<size_t>(i)]); });
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < count; ++i)
    for (const std::string& failure : failures[static_cast<size_t>(i)]) FAIL_CHECK("thread " << i << ": " << failure);
}

// The tiny Llama of examples/rl_loop.c: every call takes milliseconds, even under TSan.
inline fp8rl_model_config tiny_config() {
  fp8rl_model_config config;
  fp8rl_model_config_init(&config);
  config.vocab_size = 32;
  config.hidden_size = 64;
  config.num_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.intermediate_size = 128;
  config.max_position_embeddings = 32;
  return config;
}

// A CPU context with two workers (so its own thread pool runs too); NULL on failure.
inline fp8rl_context* create_context(Failures& failures) {
  fp8rl_context_options options;
  fp8rl_context_options_init(&options);
  options.backend = FP8RL_BACKEND_CPU;
  options.num_threads = 2;
  fp8rl_context* context = nullptr;
  expect_ok(fp8rl_context_create(&options, &context), "fp8rl_context_create", failures);
  return context;
}

inline fp8rl_policy* create_policy(fp8rl_context* context, uint64_t seed, Failures& failures) {
  const fp8rl_model_config config = tiny_config();
  fp8rl_policy* policy = nullptr;
  expect_ok(fp8rl_policy_create_random(context, &config, seed, &policy), "fp8rl_policy_create_random", failures);
  return policy;
}

inline fp8rl_recipe default_recipe() {
  fp8rl_recipe recipe;
  fp8rl_recipe_init(&recipe);
  return recipe;
}

// FP8 linear layers, KV cache and attention: every FP8 kernel runs.
inline fp8rl_recipe fp8_recipe() {
  fp8rl_recipe recipe = default_recipe();
  recipe.linear = FP8RL_PRECISION_FP8;
  recipe.kv_cache = FP8RL_PRECISION_FP8;
  recipe.attention = FP8RL_PRECISION_FP8;
  return recipe;
}

inline fp8rl_sampling_options sampling() {
  fp8rl_sampling_options options;
  fp8rl_sampling_options_init(&options);
  options.temperature = 1.0f;
  options.max_new_tokens = 6;
  return options;
}

// Three prompts, in the flat form of the C API, with seeds that depend on `salt`.
struct Prompts {
  std::vector<int32_t> tokens{2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<int64_t> offsets{0, 2, 6, 9};
  std::vector<uint64_t> seeds;
  explicit Prompts(uint64_t salt) : seeds{11 + salt, 12 + salt, 13 + salt} {}
  int64_t count() const { return 3; }
};

// Prompts followed by their completions, and the completion tokens' log-probs.
struct Sequences {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> prompt_lengths;
  std::vector<float> logprobs;
  bool operator==(const Sequences& other) const {
    return tokens == other.tokens && offsets == other.offsets && logprobs.size() == other.logprobs.size() &&
           std::memcmp(logprobs.data(), other.logprobs.data(), logprobs.size() * sizeof(float)) == 0;
  }
};

// Generates from `prompts`; the completions come back with the prompts in front.
inline Sequences generate(fp8rl_policy* policy, const Prompts& prompts, Failures& failures) {
  Sequences out;
  const fp8rl_sampling_options options = sampling();
  fp8rl_rollout* rollout = nullptr;
  if (!expect_ok(fp8rl_policy_generate(policy, prompts.tokens.data(), prompts.offsets.data(), prompts.count(),
                                       prompts.seeds.data(), &options, &rollout),
                 "fp8rl_policy_generate", failures))
    return out;
  for (int64_t i = 0; i < prompts.count(); ++i) {
    const int32_t* tokens = nullptr;
    const float* logprobs = nullptr;
    int64_t length = 0;
    fp8rl_finish_reason finish;
    if (!expect_ok(fp8rl_rollout_get(rollout, i, &tokens, &logprobs, &length, &finish), "fp8rl_rollout_get", failures))
      break;
    const auto begin = prompts.tokens.begin() + prompts.offsets[static_cast<size_t>(i)];
    const auto end = prompts.tokens.begin() + prompts.offsets[static_cast<size_t>(i) + 1];
    out.tokens.insert(out.tokens.end(), begin, end);
    out.tokens.insert(out.tokens.end(), tokens, tokens + length);
    out.offsets.push_back(static_cast<int64_t>(out.tokens.size()));
    out.prompt_lengths.push_back(end - begin);
    out.logprobs.insert(out.logprobs.end(), logprobs, logprobs + length);
  }
  expect_ok(fp8rl_rollout_destroy(rollout), "fp8rl_rollout_destroy", failures);
  return out;
}

// The completion tokens' log-probs under `policy`, at the sampling temperature.
inline std::vector<float> score(fp8rl_policy* policy, const Sequences& sequences, Failures& failures) {
  std::vector<float> logprobs(sequences.logprobs.size());
  const fp8rl_sampling_options options = sampling();
  expect_ok(fp8rl_policy_score(policy, sequences.tokens.data(), sequences.offsets.data(),
                               static_cast<int64_t>(sequences.prompt_lengths.size()), sequences.prompt_lengths.data(),
                               &options, logprobs.data(), static_cast<int64_t>(logprobs.size())),
            "fp8rl_policy_score", failures);
  return logprobs;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A fresh folder of this process under the temporary directory, removed at scope exit.
class TempFolder {
 public:
  explicit TempFolder(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("fp8rl_tsan_" + std::to_string(static_cast<long>(getpid())) + "_" + name)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  std::string path(const std::string& child = "") const { return (path_ / child).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tsan_test
