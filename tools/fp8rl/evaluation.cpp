#include "evaluation.h"

#include "dataset.h"
#include "generation.h"
#include "reward.h"

namespace fp8rl_cli {

double validation_accuracy(const Policy& policy, const Tokenizer& tokenizer, const std::vector<Problem>& problems,
                           int max_new_tokens) {
  if (problems.empty()) return 0.0;
  const PromptBatch prompts = make_prompt_batch(tokenizer, problems, 1);
  const std::vector<uint64_t> seeds(problems.size(), 0);  // greedy: seeds are unused
  const int32_t eos = Tokenizer::kEos;
  const Generated out = generate(policy, prompts, seeds, task_sampling(0.0f, max_new_tokens, &eos));
  double correct = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    correct += exact_match_reward(out.completions[i].tokens, answer_tokens(tokenizer, problems[i]));
  }
  return correct / static_cast<double>(problems.size());
}

}  // namespace fp8rl_cli
