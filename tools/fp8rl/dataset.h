// Which problems a run trains and validates on. A problem belongs to the
// validation split by a hash of its prompt, so the two splits are disjoint
// whatever the seed; each step's training problems derive from (seed, step)
// alone, so a resumed run sees exactly the problems the uninterrupted run saw.
#ifndef FP8RL_TOOLS_DATASET_H
#define FP8RL_TOOLS_DATASET_H

#include <cstdint>
#include <string>
#include <vector>

#include "task_source.h"
#include "tasks.h"
#include "tokenizer.h"

namespace fp8rl_cli {

// One in kValidationShare problems is held out.
constexpr uint64_t kValidationShare = 5;

bool is_validation_problem(const Problem& problem);

// `count` training problems for a step; `stream` separates SFT from GRPO draws.
std::vector<Problem> training_problems(const Task& task, uint64_t seed, uint64_t stream, int64_t step, int64_t count);

// A fixed validation set of `count` held-out problems (repeats possible);
// the same for every seed, so runs compare on equal terms.
std::vector<Problem> validation_problems(const Task& task, int64_t count);

// Prompts laid out as fp8rl_policy_generate() takes them: BOS + prompt characters.
struct PromptBatch {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  int64_t count() const { return static_cast<int64_t>(offsets.size()) - 1; }
};
std::vector<int32_t> prompt_tokens(const Tokenizer& tokenizer, const Problem& problem);
std::vector<int32_t> answer_tokens(const Tokenizer& tokenizer, const Problem& problem);  // + EOS
// Each problem's prompt_tokens() repeated `copies` times, consecutively (a GRPO group).
PromptBatch make_prompt_batch(const TaskSource& source, const std::vector<Problem>& problems, int64_t copies);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_DATASET_H
