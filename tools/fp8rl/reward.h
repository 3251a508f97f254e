// The verifiable reward: 1 for the exact answer followed by EOS, else 0. No
// partial credit or format shaping, so reward and accuracy mean the same thing.
#ifndef FP8RL_TOOLS_REWARD_H
#define FP8RL_TOOLS_REWARD_H

#include <cstdint>
#include <vector>

namespace fp8rl_cli {

inline float exact_match_reward(const std::vector<int32_t>& completion, const std::vector<int32_t>& answer) {
  return completion == answer ? 1.0f : 0.0f;
}

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_REWARD_H
