// The built-in character tasks as a TaskSource: problems from tasks.h, the
// character vocabulary of tokenizer.h, exact match of answer + EOS as reward
// (or, with partial credit, the share of its characters in place).
#include <memory>
#include <string>
#include <vector>

#include "cli_error.h"
#include "dataset.h"
#include "reward.h"
#include "task_source.h"
#include "tokenizer.h"
#include "train_config.h"

namespace fp8rl_cli {
namespace {

std::unique_ptr<Task> make_task(const TrainConfig& config) {
  if (config.task == "addition") return make_addition_task(config.digits);
  if (config.task == "reverse") return make_reverse_task(config.min_length, config.length, config.letters);
  throw UsageError("unknown task '" + config.task + "' (addition|reverse)");
}

class BuiltinSource : public TaskSource {
 public:
  explicit BuiltinSource(const TrainConfig& config)
      : task_(make_task(config)),
        validation_(fp8rl_cli::validation_problems(*task_, config.val_size)),
        partial_credit_(config.partial_credit) {}

  std::vector<Problem> training_problems(uint64_t seed, uint64_t stream, int64_t step, int64_t count) const override {
    return fp8rl_cli::training_problems(*task_, seed, stream, step, count);
  }
  const std::vector<Problem>& validation_problems() const override { return validation_; }
  std::vector<int32_t> prompt_tokens(const Problem& problem) const override {
    return fp8rl_cli::prompt_tokens(tokenizer_, problem);
  }
  std::vector<int32_t> answer_tokens(const Problem& problem) const override {
    return fp8rl_cli::answer_tokens(tokenizer_, problem);
  }
  const std::vector<int32_t>& stop_tokens() const override { return stop_; }
  double reward(const Problem& problem, const std::vector<int32_t>& completion) override {
    const std::vector<int32_t> answer = answer_tokens(problem);
    return partial_credit_ ? positional_match_reward(completion, answer) : exact_match_reward(completion, answer);
  }
  std::string completion_text(const std::vector<int32_t>& completion) const override {
    return tokenizer_.decode(completion);
  }
  int default_max_new_tokens() const override { return task_->max_answer_chars() + 3; }
  int64_t longest_sequence(int max_new_tokens) const override {
    return 1 + task_->max_prompt_chars() + max_new_tokens;  // BOS, prompt, completion
  }
  int64_t builtin_vocab_size() const override { return tokenizer_.padded_size(); }
  void check_vocabulary(const fp8rl_model_config& config, const std::string& folder) const override {
    // The character ids are used as they are, whatever the folder's own tokenizer.
    if (config.vocab_size < tokenizer_.size()) {
      throw UsageError(folder + " has a vocabulary of " + std::to_string(config.vocab_size) +
                       " tokens; the task's character vocabulary needs " + std::to_string(tokenizer_.size()) +
                       " (give --data to train on text with the folder's own tokenizer)");
    }
  }

 private:
  Tokenizer tokenizer_;
  std::unique_ptr<Task> task_;
  std::vector<Problem> validation_;
  bool partial_credit_;
  std::vector<int32_t> stop_{Tokenizer::kEos};
};

}  // namespace

std::unique_ptr<TaskSource> make_builtin_source(const TrainConfig& config) {
  return std::make_unique<BuiltinSource>(config);
}

}  // namespace fp8rl_cli
