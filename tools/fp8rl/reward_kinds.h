// The reward kinds behind make_reward(), one source file each.
#ifndef FP8RL_TOOLS_REWARD_KINDS_H
#define FP8RL_TOOLS_REWARD_KINDS_H

#include <memory>
#include <string>

#include "text_reward.h"

namespace fp8rl_cli {

std::unique_ptr<Reward> make_exact_reward();
std::unique_ptr<Reward> make_number_reward();
std::unique_ptr<Reward> make_regex_reward(const std::string& pattern);  // UsageError for a bad pattern
std::unique_ptr<Reward> make_command_reward(const std::string& program, double timeout_seconds);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_REWARD_KINDS_H
