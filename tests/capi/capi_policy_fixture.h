// Tiny random policies and generation helpers for the policy and rollout
// tests of the C API. Uses only the public header.
#pragma once

#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "capi/capi_fixture.h"

namespace capi_test {

// Llama: hidden 96 = 4 heads x 24, GQA with 2 kv heads, sizes off the 128 grid.
inline fp8rl_model_config llama_config() {
  fp8rl_model_config config;
  REQUIRE(fp8rl_model_config_init(&config) == FP8RL_OK);
  config.family = FP8RL_MODEL_FAMILY_LLAMA;
  config.vocab_size = 300;
  config.hidden_size = 96;
  config.num_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.intermediate_size = 160;
  config.max_position_embeddings = 128;
  config.bos_token_id = 1;
  return config;
}

// The tiny Llama of examples/rl_loop.c, for tests that replay its loop.
inline fp8rl_model_config rl_loop_config() {
  fp8rl_model_config config;
  REQUIRE(fp8rl_model_config_init(&config) == FP8RL_OK);
  config.vocab_size = 32;
  config.hidden_size = 64;
  config.num_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.intermediate_size = 128;
  config.max_position_embeddings = 32;
  return config;
}

// Qwen3: per-head q/k norms and an explicit head_dim (q_dim 128 != hidden 96), three layers.
inline fp8rl_model_config qwen3_config() {
  fp8rl_model_config config = llama_config();
  config.family = FP8RL_MODEL_FAMILY_QWEN3;
  config.qk_norm = 1;
  config.head_dim = 32;
  config.num_layers = 3;
  config.rms_norm_eps = 1e-6;
  config.rope_theta = 1000000.0;
  return config;
}

// Qwen2: q/k/v biases and tied embeddings.
inline fp8rl_model_config qwen2_config() {
  fp8rl_model_config config = llama_config();
  config.family = FP8RL_MODEL_FAMILY_QWEN2;
  config.attention_bias = 1;
  config.tie_word_embeddings = 1;
  config.num_attention_heads = 6;
  config.num_key_value_heads = 2;
  return config;
}

// A policy destroyed at scope exit (before the context, declared earlier).
class Policy {
 public:
  Policy(fp8rl_context* context, const fp8rl_model_config& config, uint64_t seed = 7) {
    REQUIRE_MESSAGE(fp8rl_policy_create_random(context, &config, seed, &policy_) == FP8RL_OK,
                    std::string(fp8rl_last_error_message()));
  }
  explicit Policy(fp8rl_policy* adopted) : policy_(adopted) {}
  ~Policy() { fp8rl_policy_destroy(policy_); }
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  fp8rl_policy* get() const { return policy_; }

  void set_recipe(const fp8rl_recipe& recipe) {
    REQUIRE_MESSAGE(fp8rl_policy_set_recipe(policy_, &recipe) == FP8RL_OK, std::string(fp8rl_last_error_message()));
  }

 private:
  fp8rl_policy* policy_ = nullptr;
};

// Prompts in the flat form of the C API, with one seed each.
struct Prompts {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<uint64_t> seeds;

  void add(const std::vector<int32_t>& prompt, uint64_t seed) {
    tokens.insert(tokens.end(), prompt.begin(), prompt.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
    seeds.push_back(seed);
  }
  int64_t count() const { return static_cast<int64_t>(seeds.size()); }
};

// A deterministic prompt of `length` ids in [2, vocab).
inline std::vector<int32_t> make_prompt(int64_t length, uint32_t salt, int32_t vocab = 300) {
  std::vector<int32_t> prompt;
  uint32_t state = 2463534242u ^ (salt * 2654435761u);
  for (int64_t i = 0; i < length; ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    prompt.push_back(static_cast<int32_t>(2 + state % static_cast<uint32_t>(vocab - 2)));
  }
  return prompt;
}

// Four prompts of lengths 3, 9, 1 and 17.
inline Prompts mixed_prompts() {
  Prompts prompts;
  prompts.add(make_prompt(3, 1), 101);
  prompts.add(make_prompt(9, 2), 102);
  prompts.add(make_prompt(1, 3), 103);
  prompts.add(make_prompt(17, 4), 104);
  return prompts;
}

struct Completion {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  fp8rl_finish_reason finish = FP8RL_FINISH_FORCE_32BIT;
};

// Reads every completion through fp8rl_rollout_get and checks fp8rl_rollout_copy agrees.
inline std::vector<Completion> read_rollout(const fp8rl_rollout* rollout) {
  int64_t count = 0, total = 0;
  REQUIRE(fp8rl_rollout_count(rollout, &count) == FP8RL_OK);
  REQUIRE(fp8rl_rollout_total_tokens(rollout, &total) == FP8RL_OK);
  std::vector<Completion> completions(static_cast<size_t>(count));
  int64_t sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int32_t* tokens = nullptr;
    const float* logprobs = nullptr;
    int64_t length = -1;
    Completion& c = completions[static_cast<size_t>(i)];
    REQUIRE(fp8rl_rollout_get(rollout, i, &tokens, &logprobs, &length, &c.finish) == FP8RL_OK);
    REQUIRE(length >= 0);
    c.tokens.assign(tokens, tokens + length);
    c.logprobs.assign(logprobs, logprobs + length);
    sum += length;
  }
  CHECK(sum == total);

  std::vector<int32_t> flat_tokens(static_cast<size_t>(total));
  std::vector<float> flat_logprobs(static_cast<size_t>(total));
  std::vector<int64_t> offsets(static_cast<size_t>(count + 1), -1);
  std::vector<fp8rl_finish_reason> finish(static_cast<size_t>(count));
  REQUIRE(fp8rl_rollout_copy(rollout, flat_tokens.data(), flat_logprobs.data(), total, offsets.data(), finish.data()) ==
          FP8RL_OK);
  CHECK(offsets[0] == 0);
  for (size_t i = 0; i < completions.size(); ++i) {
    const auto begin = static_cast<size_t>(offsets[i]);
    const auto end = static_cast<size_t>(offsets[i + 1]);
    CHECK(std::vector<int32_t>(flat_tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                               flat_tokens.begin() + static_cast<std::ptrdiff_t>(end)) == completions[i].tokens);
    CHECK(std::memcmp(flat_logprobs.data() + begin, completions[i].logprobs.data(), (end - begin) * sizeof(float)) ==
          0);
    CHECK(finish[i] == completions[i].finish);
  }
  return completions;
}

inline std::vector<Completion> generate(fp8rl_policy* policy, const Prompts& prompts,
                                        const fp8rl_sampling_options& options) {
  fp8rl_rollout* rollout = nullptr;
  REQUIRE_MESSAGE(fp8rl_policy_generate(policy, prompts.tokens.data(), prompts.offsets.data(), prompts.count(),
                                        prompts.seeds.data(), &options, &rollout) == FP8RL_OK,
                  std::string(fp8rl_last_error_message()));
  auto completions = read_rollout(rollout);
  REQUIRE(fp8rl_rollout_destroy(rollout) == FP8RL_OK);
  return completions;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

inline fp8rl_sampling_options sampling(float temperature = 1.0f, int32_t max_new_tokens = 12) {
  fp8rl_sampling_options options;
  REQUIRE(fp8rl_sampling_options_init(&options) == FP8RL_OK);
  options.temperature = temperature;
  options.max_new_tokens = max_new_tokens;
  return options;
}

inline fp8rl_recipe default_recipe() {
  fp8rl_recipe recipe;
  REQUIRE(fp8rl_recipe_init(&recipe) == FP8RL_OK);
  return recipe;
}

// FP8 linear layers, KV cache and attention: the published end-to-end recipe.
inline fp8rl_recipe fp8_everything_recipe() {
  fp8rl_recipe recipe = default_recipe();
  recipe.linear = FP8RL_PRECISION_FP8;
  recipe.kv_cache = FP8RL_PRECISION_FP8;
  recipe.attention = FP8RL_PRECISION_FP8;
  return recipe;
}

// Asserts `status` is `expected` and the thread's message mentions `needle`.
inline void check_error(fp8rl_status status, fp8rl_status expected, const char* needle) {
  CHECK_MESSAGE(status == expected,
                "got " << fp8rl_status_name(status) << ": " << std::string(fp8rl_last_error_message()));
  const std::string message = fp8rl_last_error_message();
  CHECK_MESSAGE(message.find(needle) != std::string::npos, "message '" << message << "' lacks '" << needle << "'");
}

}  // namespace capi_test
