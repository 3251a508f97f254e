#include "generation.h"

namespace fp8rl_cli {

fp8rl_sampling_options task_sampling(float temperature, int max_new_tokens, const std::vector<int32_t>& stop_tokens) {
  fp8rl_sampling_options options;
  check(fp8rl_sampling_options_init(&options), "fp8rl_sampling_options_init");
  options.temperature = temperature;
  options.max_new_tokens = max_new_tokens;
  options.stop_token_ids = stop_tokens.empty() ? nullptr : stop_tokens.data();
  options.num_stop_token_ids = static_cast<int64_t>(stop_tokens.size());
  options.stop_at_eos = 0;
  return options;
}

Generated generate(const Policy& policy, const PromptBatch& prompts, const std::vector<uint64_t>& seeds,
                   const fp8rl_sampling_options& options) {
  Rollout rollout;
  check(fp8rl_policy_generate(policy.get(), prompts.tokens.data(), prompts.offsets.data(), prompts.count(),
                              seeds.data(), &options, rollout.out()),
        "fp8rl_policy_generate");
  Generated result;
  check(fp8rl_rollout_seconds(rollout.get(), &result.seconds), "fp8rl_rollout_seconds");
  int64_t count = 0;
  check(fp8rl_rollout_count(rollout.get(), &count), "fp8rl_rollout_count");
  for (int64_t i = 0; i < count; ++i) {
    const int32_t* tokens = nullptr;
    const float* logprobs = nullptr;
    int64_t length = 0;
    Completion c;
    check(fp8rl_rollout_get(rollout.get(), i, &tokens, &logprobs, &length, &c.finish), "fp8rl_rollout_get");
    c.tokens.assign(tokens, tokens + length);
    c.logprobs.assign(logprobs, logprobs + length);
    const int32_t* experts = nullptr;
    int64_t positions = 0, layers = 0, k = 0;
    check(fp8rl_rollout_get_experts(rollout.get(), i, &experts, &positions, &layers, &k), "fp8rl_rollout_get_experts");
    c.experts.assign(experts, experts + positions * layers * k);
    result.completions.push_back(std::move(c));
  }
  return result;
}

}  // namespace fp8rl_cli
