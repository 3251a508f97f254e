#include "evaluation.h"

#include "dataset.h"

namespace fp8rl_cli {

Evaluation evaluate_problems(const Policy& policy, TaskSource& source, const std::vector<Problem>& problems,
                             int max_new_tokens) {
  Evaluation result;
  if (problems.empty()) return result;
  const PromptBatch prompts = make_prompt_batch(source, problems, 1);
  const std::vector<uint64_t> seeds(problems.size(), 0);  // greedy: seeds are unused
  Generated out = generate(policy, prompts, seeds, task_sampling(0.0f, max_new_tokens, source.stop_tokens()));
  double sum = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const double reward = source.reward(problems[i], out.completions[i].tokens);
    sum += reward;
    if (reward == 1.0) ++result.correct;
    result.rewards.push_back(reward);
  }
  result.mean_reward = sum / static_cast<double>(problems.size());
  result.completions = std::move(out.completions);
  return result;
}

double validation_accuracy(const Policy& policy, TaskSource& source, const std::vector<Problem>& problems,
                           int max_new_tokens) {
  return evaluate_problems(policy, source, problems, max_new_tokens).mean_reward;
}

}  // namespace fp8rl_cli
