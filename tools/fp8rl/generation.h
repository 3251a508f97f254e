// Generation through the C API, returned as plain vectors.
#ifndef FP8RL_TOOLS_GENERATION_H
#define FP8RL_TOOLS_GENERATION_H

#include <fp8rl/fp8rl.h>

#include <cstdint>
#include <vector>

#include "dataset.h"
#include "handles.h"

namespace fp8rl_cli {

struct Completion {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<int32_t> experts;  // [prompt + completion - 1, sparse layers, k] when recorded
  fp8rl_finish_reason finish = FP8RL_FINISH_STOP;
};

struct Generated {
  std::vector<Completion> completions;  // one per prompt, in prompt order
  double seconds = 0;
};

// Plain sampling that stops at the task source's stop ids (for the character
// vocabulary its EOS: an HF model's own EOS ids mean nothing to it, so the
// config's are not used). `stop_tokens` must outlive the options.
fp8rl_sampling_options task_sampling(float temperature, int max_new_tokens, const std::vector<int32_t>& stop_tokens);

Generated generate(const Policy& policy, const PromptBatch& prompts, const std::vector<uint64_t>& seeds,
                   const fp8rl_sampling_options& options);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_GENERATION_H
