#include "dataset.h"

#include "rng.h"

namespace fp8rl_cli {

bool is_validation_problem(const Problem& problem) { return hash_string(problem.prompt) % kValidationShare == 0; }

std::vector<Problem> training_problems(const Task& task, uint64_t seed, uint64_t stream, int64_t step, int64_t count) {
  Rng rng(seed, stream, static_cast<uint64_t>(step));
  std::vector<Problem> problems;
  while (static_cast<int64_t>(problems.size()) < count) {
    Problem p = task.sample(rng);
    if (!is_validation_problem(p)) problems.push_back(std::move(p));
  }
  return problems;
}

std::vector<Problem> validation_problems(const Task& task, int64_t count) {
  Rng rng(0xFA11DA7Eull);  // fixed: the validation set does not depend on the run's seed
  std::vector<Problem> problems;
  // Repeats are kept: the set then follows the training distribution (deduplicating
  // would over-weight the rare long strings of `reverse`).
  while (static_cast<int64_t>(problems.size()) < count) {
    Problem p = task.sample(rng);
    if (is_validation_problem(p)) problems.push_back(std::move(p));
  }
  return problems;
}

std::vector<int32_t> prompt_tokens(const Tokenizer& tokenizer, const Problem& problem) {
  std::vector<int32_t> tokens{Tokenizer::kBos};
  const std::vector<int32_t> text = tokenizer.encode(problem.prompt);
  tokens.insert(tokens.end(), text.begin(), text.end());
  return tokens;
}

std::vector<int32_t> answer_tokens(const Tokenizer& tokenizer, const Problem& problem) {
  std::vector<int32_t> tokens = tokenizer.encode(problem.answer);
  tokens.push_back(Tokenizer::kEos);
  return tokens;
}

PromptBatch make_prompt_batch(const TaskSource& source, const std::vector<Problem>& problems, int64_t copies) {
  PromptBatch batch;
  for (const Problem& p : problems) {
    const std::vector<int32_t> tokens = source.prompt_tokens(p);
    for (int64_t c = 0; c < copies; ++c) {
      batch.tokens.insert(batch.tokens.end(), tokens.begin(), tokens.end());
      batch.offsets.push_back(static_cast<int64_t>(batch.tokens.size()));
    }
  }
  return batch;
}

}  // namespace fp8rl_cli
