#include "core/rollout/sampling_options.h"

#include <cmath>
#include <string>

#include "kernels/error.h"

namespace fp8rl::rollout {

void validate_sampling_options(const SamplingOptions& options, const model::ModelConfig& config) {
  require(std::isfinite(options.temperature) && options.temperature >= 0.0f,
          "sampling: temperature must be finite and >= 0 (0 is greedy), got " + std::to_string(options.temperature));
  require(options.top_k >= 0,
          "sampling: top_k must be >= 0 (0 keeps every token), got " + std::to_string(options.top_k));
  require(options.top_p > 0.0f && options.top_p <= 1.0f,
          "sampling: top_p must be in (0, 1], got " + std::to_string(options.top_p));
  require(options.max_new_tokens >= 1,
          "sampling: max_new_tokens must be >= 1, got " + std::to_string(options.max_new_tokens));
  require(options.batch_slots >= 0, "sampling: batch_slots must be >= 0 (0: all prompts at once)");
  require(options.max_tokens_per_step >= 1, "sampling: max_tokens_per_step must be >= 1");
  for (size_t i = 0; i < options.stop_token_ids.size(); ++i) {
    const int32_t id = options.stop_token_ids[i];
    require(id >= 0 && id < config.vocab_size, "sampling: stop token id " + std::to_string(id) + " (entry " +
                                                   std::to_string(i) + ") is outside the vocabulary [0, " +
                                                   std::to_string(config.vocab_size) + ")");
  }
}

SamplingRow sampling_row(const SamplingOptions& options, double uniform) {
  SamplingRow row;
  row.temperature = options.temperature;
  row.top_k = options.top_k;
  row.top_p = options.top_p;
  row.uniform = uniform;
  return row;
}

}  // namespace fp8rl::rollout
