// Where a training run's problems come from, how they become tokens and how a
// completion is scored: one of the built-in character tasks (tasks.h over
// tokenizer.h's character vocabulary, exact-match reward), or a JSONL text
// dataset under an HF folder's tokenizer with a text reward (text_task.h).
// The training loop, the batch builders and validation see only this.
#ifndef FP8RL_TOOLS_TASK_SOURCE_H
#define FP8RL_TOOLS_TASK_SOURCE_H

#include <fp8rl/fp8rl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tasks.h"

namespace fp8rl_cli {

class TaskSource {
 public:
  virtual ~TaskSource() = default;

  // `count` training problems of a step, from (seed, stream, step) alone, so a
  // resumed run draws what the uninterrupted run drew; `stream` separates SFT
  // from GRPO draws.
  virtual std::vector<Problem> training_problems(uint64_t seed, uint64_t stream, int64_t step,
                                                 int64_t count) const = 0;
  // The fixed validation set.
  virtual const std::vector<Problem>& validation_problems() const = 0;

  // What fp8rl_policy_generate() is given: the prompt with any leading special tokens.
  virtual std::vector<int32_t> prompt_tokens(const Problem& problem) const = 0;
  // The SFT target after the prompt: the answer's tokens, then EOS (where there is one).
  virtual std::vector<int32_t> answer_tokens(const Problem& problem) const = 0;
  // Ids that end a completion (and are part of it).
  virtual const std::vector<int32_t>& stop_tokens() const = 0;
  // The reward of one completion (its ids as generated). Not const: an
  // external reward program is a conversation. Throws LibraryError naming the
  // problem when no reward can be given.
  virtual double reward(const Problem& problem, const std::vector<int32_t>& completion) = 0;
  // Readable text of a completion (special tokens left out).
  virtual std::string completion_text(const std::vector<int32_t>& completion) const = 0;

  // The completion limit when --max-new-tokens is 0.
  virtual int default_max_new_tokens() const = 0;
  // An upper bound on prompt + completion tokens, for the trainer's micro-batch size.
  virtual int64_t longest_sequence(int max_new_tokens) const = 0;
  // The vocabulary a built-in (random) policy needs; 0 when the source needs a model folder.
  virtual int64_t builtin_vocab_size() const = 0;
  // Throws UsageError when a loaded policy's vocabulary cannot hold the source's ids.
  virtual void check_vocabulary(const fp8rl_model_config& config, const std::string& folder) const = 0;
};

// The built-in task `config.task` (addition|reverse) with its sizes.
struct TrainConfig;
std::unique_ptr<TaskSource> make_builtin_source(const TrainConfig& config);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_TASK_SOURCE_H
