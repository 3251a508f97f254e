// Validation accuracy: greedy (temperature 0) completions scored by exact match.
#ifndef FP8RL_TOOLS_EVALUATION_H
#define FP8RL_TOOLS_EVALUATION_H

#include <vector>

#include "handles.h"
#include "tasks.h"
#include "tokenizer.h"

namespace fp8rl_cli {

double validation_accuracy(const Policy& policy, const Tokenizer& tokenizer, const std::vector<Problem>& problems,
                           int max_new_tokens);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_EVALUATION_H
