// Rollouts: batched generation with continuous batching, and the
// full-sequence scoring that training uses. Both run the same forward pass,
// row by row in the same arithmetic, so the log-prob of a completion token
// recorded during generation equals, bit for bit, the one score_completions()
// computes for the same sequence and sampling options.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/policy/policy.h"
#include "core/rollout/sampling_options.h"
#include "core/rollout/token_sequences.h"

namespace fp8rl::rollout {

// Values are stable: they cross the C ABI (fp8rl_finish_reason).
enum class FinishReason : int32_t {
  stop = 0,          // emitted a stop token (it is the last completion token)
  length = 1,        // reached max_new_tokens
  context_full = 2,  // reached the model's max_position_embeddings
};

struct Rollout {
  std::vector<int32_t> tokens;  // [completion length] sampled tokens
  std::vector<float> logprobs;  // [completion length] log-prob of each under the sampling distribution
  FinishReason finish = FinishReason::length;
  // With SamplingOptions::record_experts on a Mixture-of-Experts policy: the
  // experts every fed token was routed to, [positions, sparse layers, k],
  // best first, for positions 0 .. prompt length + completion length - 2
  // (the last sampled token is never fed). Empty otherwise.
  std::vector<int32_t> experts;
};

// Called, when set, with the logits [vocab] each completion token was drawn
// from (tests use it; it costs a download per token on a device).
using LogitsObserver = std::function<void(int64_t request, int64_t step, const float* logits, int64_t vocab)>;

// One completion per prompt. seeds[i] alone decides the random draws of
// prompt i: completion token t uses counter_uniform(seeds[i], t), so the
// same seed gives the same completion whatever else is in the batch.
// Errors (invalid_argument): bad prompts (validate_sequences), seeds.size()
// != prompts.count, bad options, a prompt that leaves no room for one token.
std::vector<Rollout> generate(policy::Policy& policy, const TokenSequences& prompts, const std::vector<uint64_t>& seeds,
                              const SamplingOptions& options, const LogitsObserver& observer = {});

// For each sequence, the log-probs of its tokens after the first
// prompt_lengths[i] under the distribution options define (temperature,
// top_k, top_p), concatenated in sequence order: what generate() recorded.
// prompt_lengths[i] in [1, length_i]. Returns sum(length_i - prompt_lengths[i]) values.
// A sequence may hold max_position_embeddings + 1 tokens (its last token is
// never fed), as a completion that ended with FinishReason::context_full does.
std::vector<float> score_completions(policy::Policy& policy, const TokenSequences& sequences,
                                     const std::vector<int64_t>& prompt_lengths, const SamplingOptions& options);

// Next-token logits at every position of every sequence, [total_tokens,
// vocab] row-major (tests and tools; memory grows with the batch).
std::vector<float> full_logits(policy::Policy& policy, const TokenSequences& sequences);

}  // namespace fp8rl::rollout
