// Validation: greedy (temperature 0) completions scored by the task source's
// reward. With rewards of 0 or 1 the mean reward is the accuracy; with other
// rewards it is what a run reports as its validation figure.
#ifndef FP8RL_TOOLS_EVALUATION_H
#define FP8RL_TOOLS_EVALUATION_H

#include <cstdint>
#include <vector>

#include "generation.h"
#include "handles.h"
#include "task_source.h"
#include "tasks.h"

namespace fp8rl_cli {

struct Evaluation {
  double mean_reward = 0;
  int64_t correct = 0;              // completions with reward exactly 1
  std::vector<double> rewards;      // per problem
  std::vector<Completion> completions;  // per problem
};

Evaluation evaluate_problems(const Policy& policy, TaskSource& source, const std::vector<Problem>& problems,
                             int max_new_tokens);

// evaluate_problems()'s mean reward.
double validation_accuracy(const Policy& policy, TaskSource& source, const std::vector<Problem>& problems,
                           int max_new_tokens);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_EVALUATION_H
