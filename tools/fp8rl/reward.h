// The verifiable rewards of the built-in tasks. Exact match: 1 for the exact
// answer followed by EOS, else 0, so reward and accuracy mean the same thing.
// Positional match (--partial-credit): the share of positions where the
// completion has the answer's token, so that a long answer that is almost
// right still tells GRPO something.
#ifndef FP8RL_TOOLS_REWARD_H
#define FP8RL_TOOLS_REWARD_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fp8rl_cli {

inline float exact_match_reward(const std::vector<int32_t>& completion, const std::vector<int32_t>& answer) {
  return completion == answer ? 1.0f : 0.0f;
}

// Positions counted over the longer of the two (answer and completion both
// end in EOS), so that trailing extra tokens cost as much as missing ones; 1
// exactly for the exact answer.
inline float positional_match_reward(const std::vector<int32_t>& completion, const std::vector<int32_t>& answer) {
  const size_t positions = std::max(completion.size(), answer.size());
  if (positions == 0) return 1.0f;
  size_t same = 0;
  for (size_t i = 0; i < std::min(completion.size(), answer.size()); ++i) same += completion[i] == answer[i] ? 1 : 0;
  return static_cast<float>(same) / static_cast<float>(positions);
}

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_REWARD_H
