// Training batches in the layout fp8rl_train_batch takes: prompt + completion
// per sequence, per-token arrays over completion tokens only.
#ifndef FP8RL_TOOLS_BATCHES_H
#define FP8RL_TOOLS_BATCHES_H

#include <fp8rl/fp8rl.h>

#include <cstdint>
#include <vector>

#include "generation.h"
#include "task_source.h"
#include "tasks.h"

namespace fp8rl_cli {

struct BatchData {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> prompt_lengths;
  std::vector<float> logp_gen;  // GRPO only
  std::vector<float> rewards;   // GRPO only
  std::vector<int32_t> experts;  // GRPO with a Mixture-of-Experts policy: the generator's, per fed token
  double generation_seconds = 0;
  int64_t completion_tokens = 0;

  void add(const std::vector<int32_t>& prompt, const std::vector<int32_t>& completion);
  // A view for fp8rl_trainer_step(), valid while this object lives.
  fp8rl_train_batch view() const;
};

// SFT: each problem's prompt followed by its reference answer and EOS.
BatchData sft_batch(const TaskSource& source, const std::vector<Problem>& problems);

// GRPO: `group` sampled completions of each problem (consecutive), with the
// source's rewards and the generator's log-probs.
BatchData grpo_batch(TaskSource& source, const std::vector<Problem>& problems, int64_t group,
                     const Generated& generated);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_BATCHES_H
