// How completions are drawn: the sampling distribution (temperature, top-k,
// top-p; transformer_ops.h defines it exactly), when to stop, and how many
// sequences the engine runs at once.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model_config.h"
#include "kernels/transformer_ops.h"

namespace fp8rl::rollout {

struct SamplingOptions {
  float temperature = 1.0f;  // 0: greedy
  int32_t top_k = 0;         // 0: all tokens
  float top_p = 1.0f;        // (0, 1]
  int32_t max_new_tokens = 64;
  std::vector<int32_t> stop_token_ids;  // a completion ends after emitting one of these
  bool stop_at_eos = true;              // also stop at the config's eos_token_id(s)
  // Sequences in flight at once (KV-cache slots); 0: all prompts. When there
  // are more prompts, finished sequences hand their slot to waiting prompts.
  int32_t batch_slots = 0;
  // Bound on the tokens of one forward pass (prefill is chunked to fit).
  int32_t max_tokens_per_step = 2048;
  // Keep each fed token's expert choices in Rollout::experts (MoE policies).
  bool record_experts = false;
};

// Throws invalid_argument naming the field; stop ids must be < vocab_size.
void validate_sampling_options(const SamplingOptions& options, const model::ModelConfig& config);

// The per-row distribution parameters of the sampling kernels.
SamplingRow sampling_row(const SamplingOptions& options, double uniform);

}  // namespace fp8rl::rollout
