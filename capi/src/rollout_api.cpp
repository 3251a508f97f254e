#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "api_guard.h"
#include "core/rollout/rollout.h"
#include "enum_mapping.h"
#include "handles.h"
#include "sequence_arrays.h"

using namespace fp8rl::capi;

namespace {

fp8rl_sampling_options default_sampling_options() {
  const fp8rl::rollout::SamplingOptions defaults;
  fp8rl_sampling_options options{};
  options.struct_size = sizeof(options);
  options.temperature = defaults.temperature;
  options.top_k = defaults.top_k;
  options.top_p = defaults.top_p;
  options.max_new_tokens = defaults.max_new_tokens;
  options.stop_token_ids = nullptr;
  options.num_stop_token_ids = 0;
  options.stop_at_eos = defaults.stop_at_eos ? 1 : 0;
  options.batch_slots = defaults.batch_slots;
  options.max_tokens_per_step = defaults.max_tokens_per_step;
  options.record_experts = defaults.record_experts ? 1 : 0;
  return options;
}

// The core validates the values (validate_sampling_options); this checks what
// only the C form can get wrong: the stop-token array.
fp8rl::rollout::SamplingOptions sampling_options_from(const fp8rl_sampling_options* given) {
  const fp8rl_sampling_options o = read_options(given, default_sampling_options(), "options");
  fp8rl::require(o.num_stop_token_ids >= 0,
                 "options->num_stop_token_ids is " + std::to_string(o.num_stop_token_ids) + "; expected >= 0");
  fp8rl::require(
      o.num_stop_token_ids == 0 || o.stop_token_ids != nullptr,
      "options->stop_token_ids is NULL but options->num_stop_token_ids is " + std::to_string(o.num_stop_token_ids));
  fp8rl::rollout::SamplingOptions options;
  options.temperature = o.temperature;
  options.top_k = o.top_k;
  options.top_p = o.top_p;
  options.max_new_tokens = o.max_new_tokens;
  if (o.num_stop_token_ids > 0)
    options.stop_token_ids.assign(o.stop_token_ids, o.stop_token_ids + o.num_stop_token_ids);
  options.stop_at_eos = o.stop_at_eos != 0;
  options.batch_slots = o.batch_slots;
  options.max_tokens_per_step = o.max_tokens_per_step;
  options.record_experts = o.record_experts != 0;
  return options;
}

std::unique_ptr<fp8rl_rollout> flatten(const std::vector<fp8rl::rollout::Rollout>& rollouts,
                                       const fp8rl::model::ModelConfig& config) {
  auto result = std::make_unique<fp8rl_rollout>();
  result->sparse_layers = fp8rl::model::sparse_layer_count(config);
  result->top_k = config.moe.num_experts_per_tok;
  result->expert_offsets.push_back(0);
  size_t total = 0;
  for (const auto& r : rollouts) total += r.tokens.size();
  result->tokens.reserve(total);
  result->logprobs.reserve(total);
  result->offsets.reserve(rollouts.size() + 1);
  result->finish.reserve(rollouts.size());
  result->offsets.push_back(0);
  for (const auto& r : rollouts) {
    if (r.logprobs.size() != r.tokens.size()) {
      fp8rl::fail(fp8rl::Status::internal, "a completion has " + std::to_string(r.tokens.size()) + " tokens but " +
                                               std::to_string(r.logprobs.size()) + " log-probs");
    }
    result->tokens.insert(result->tokens.end(), r.tokens.begin(), r.tokens.end());
    result->logprobs.insert(result->logprobs.end(), r.logprobs.begin(), r.logprobs.end());
    result->offsets.push_back(static_cast<int64_t>(result->tokens.size()));
    result->finish.push_back(to_public(r.finish));
    result->experts.insert(result->experts.end(), r.experts.begin(), r.experts.end());
    result->expert_offsets.push_back(static_cast<int64_t>(result->experts.size()));
  }
  return result;
}

int64_t count_of(const fp8rl_rollout& rollout) { return static_cast<int64_t>(rollout.finish.size()); }

// `index` checked against the completions: invalid_argument naming it.
size_t completion_index(const fp8rl_rollout& rollout, int64_t index) {
  const int64_t count = count_of(rollout);
  fp8rl::require(index >= 0 && index < count,
                 "index is " + std::to_string(index) + "; the rollout has " + std::to_string(count) + " completions");
  return static_cast<size_t>(index);
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_sampling_options_init(fp8rl_sampling_options* options) {
  return guarded(__func__, [&] {
    fp8rl::require(options != nullptr, "options is NULL");
    *options = default_sampling_options();
  });
}

FP8RL_API fp8rl_status fp8rl_policy_generate(fp8rl_policy* policy, const int32_t* prompt_tokens,
                                             const int64_t* prompt_offsets, int64_t num_prompts, const uint64_t* seeds,
                                             const fp8rl_sampling_options* options, fp8rl_rollout** out_rollout) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    const auto prompts =
        sequences_from(prompt_tokens, prompt_offsets, num_prompts, "prompt_tokens", "prompt_offsets", "num_prompts");
    fp8rl::require(seeds != nullptr, "seeds is NULL");
    fp8rl::require(out_rollout != nullptr, "out_rollout is NULL");
    const auto sampling = sampling_options_from(options);
    const std::vector<uint64_t> seed_list(seeds, seeds + num_prompts);
    std::vector<fp8rl::rollout::Rollout> rollouts;
    const auto start = std::chrono::steady_clock::now();
    {
      const std::lock_guard<std::mutex> lock(policy->context->impl.mutex());
      rollouts = fp8rl::rollout::generate(impl, prompts, seed_list, sampling);
    }
    std::unique_ptr<fp8rl_rollout> result = flatten(rollouts, impl.config());
    result->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    *out_rollout = result.release();
  });
}

FP8RL_API fp8rl_status fp8rl_policy_score(fp8rl_policy* policy, const int32_t* tokens, const int64_t* offsets,
                                          int64_t num_sequences, const int64_t* prompt_lengths,
                                          const fp8rl_sampling_options* options, float* logprobs, int64_t capacity) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    const auto sequences = sequences_from(tokens, offsets, num_sequences, "tokens", "offsets", "num_sequences");
    fp8rl::require(prompt_lengths != nullptr, "prompt_lengths is NULL");
    fp8rl::require(logprobs != nullptr || capacity == 0, "logprobs is NULL");
    const auto sampling = sampling_options_from(options);
    // Refuse a too small buffer before the forward pass when the sizes are readable.
    const int64_t expected = completion_tokens(sequences, prompt_lengths);
    if (expected >= 0) check_capacity(capacity, expected, "the completions hold");
    const std::vector<int64_t> lengths(prompt_lengths, prompt_lengths + num_sequences);
    std::vector<float> scores;
    {
      const std::lock_guard<std::mutex> lock(policy->context->impl.mutex());
      scores = fp8rl::rollout::score_completions(impl, sequences, lengths, sampling);
    }
    check_capacity(capacity, static_cast<int64_t>(scores.size()), "the completions hold");
    std::copy(scores.begin(), scores.end(), logprobs);
  });
}

FP8RL_API fp8rl_status fp8rl_rollout_seconds(const fp8rl_rollout* rollout, double* out_seconds) {
  return guarded(__func__, [&] {
    const auto& impl = rollout_of(rollout);
    fp8rl::require(out_seconds != nullptr, "out_seconds is NULL");
    *out_seconds = impl.seconds;
  });
}

FP8RL_API fp8rl_status fp8rl_rollout_count(const fp8rl_rollout* rollout, int64_t* out_count) {
  return guarded(__func__, [&] {
    const auto& impl = rollout_of(rollout);
    fp8rl::require(out_count != nullptr, "out_count is NULL");
    *out_count = count_of(impl);
  });
}

FP8RL_API fp8rl_status fp8rl_rollout_total_tokens(const fp8rl_rollout* rollout, int64_t* out_total) {
  return guarded(__func__, [&] {
    const auto& impl = rollout_of(rollout);
    fp8rl::require(out_total != nullptr, "out_total is NULL");
    *out_total = static_cast<int64_t>(impl.tokens.size());
  });
}

FP8RL_API fp8rl_status fp8rl_rollout_get(const fp8rl_rollout* rollout, int64_t index, const int32_t** out_tokens,
                                         const float** out_logprobs, int64_t* out_length,
                                         fp8rl_finish_reason* out_finish) {
  return guarded(__func__, [&] {
    const auto& impl = rollout_of(rollout);
    const size_t i = completion_index(impl, index);
    const auto begin = static_cast<size_t>(impl.offsets[i]);
    if (out_tokens != nullptr) *out_tokens = impl.tokens.data() + begin;
    if (out_logprobs != nullptr) *out_logprobs = impl.logprobs.data() + begin;
    if (out_length != nullptr) *out_length = impl.offsets[i + 1] - impl.offsets[i];
    if (out_finish != nullptr) *out_finish = impl.finish[i];
  });
}

FP8RL_API fp8rl_status fp8rl_rollout_get_experts(const fp8rl_rollout* rollout, int64_t index,
                                                 const int32_t** out_experts, int64_t* out_positions,
                                                 int64_t* out_sparse_layers, int64_t* out_top_k) {
  return guarded(__func__, [&] {
    const auto& impl = rollout_of(rollout);
    const size_t i = completion_index(impl, index);
    const int64_t per_position = impl.sparse_layers * impl.top_k;
    const int64_t values = impl.expert_offsets[i + 1] - impl.expert_offsets[i];
    if (out_experts != nullptr) *out_experts = impl.experts.data() + impl.expert_offsets[i];
    if (out_positions != nullptr) *out_positions = per_position > 0 ? values / per_position : 0;
    if (out_sparse_layers != nullptr) *out_sparse_layers = impl.sparse_layers;
    if (out_top_k != nullptr) *out_top_k = impl.top_k;
  });
}

FP8RL_API fp8rl_status fp8rl_rollout_copy(const fp8rl_rollout* rollout, int32_t* tokens, float* logprobs,
                                          int64_t capacity, int64_t* offsets, fp8rl_finish_reason* finish_reasons) {
  return guarded(__func__, [&] {
    const auto& impl = rollout_of(rollout);
    if (tokens != nullptr || logprobs != nullptr) {
      check_capacity(capacity, static_cast<int64_t>(impl.tokens.size()), "the rollout holds");
    }
    if (tokens != nullptr) std::copy(impl.tokens.begin(), impl.tokens.end(), tokens);
    if (logprobs != nullptr) std::copy(impl.logprobs.begin(), impl.logprobs.end(), logprobs);
    if (offsets != nullptr) std::copy(impl.offsets.begin(), impl.offsets.end(), offsets);
    if (finish_reasons != nullptr) std::copy(impl.finish.begin(), impl.finish.end(), finish_reasons);
  });
}

FP8RL_API fp8rl_status fp8rl_rollout_destroy(fp8rl_rollout* rollout) {
  return guarded(__func__, [&] { delete rollout; });
}

}  // extern "C"
