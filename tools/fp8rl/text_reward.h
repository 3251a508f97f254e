// Rewards for text completions, chosen on the command line with --reward KIND:
//
//   exact          1 when the completion equals the answer after whitespace
//                  normalisation (trimmed, runs of whitespace made one space)
//   number         1 when the number the completion gives equals the answer's
//                  (see number_answer.h for how a number is found), else 0
//   regex:PATTERN  1 when PATTERN matches anywhere in the completion
//                  (std::regex, ECMAScript grammar; anchor with ^ and $)
//   cmd:PROGRAM    whatever an external program says: it gets one JSON line
//                  {"prompt": ..., "completion": ..., "answer": ...} per
//                  completion on stdin and answers {"reward": number} on
//                  stdout (see reward_command.cpp)
//
// Unlike reward.h's token-level exact match, these see decoded text.
#ifndef FP8RL_TOOLS_TEXT_REWARD_H
#define FP8RL_TOOLS_TEXT_REWARD_H

#include <cstdint>
#include <memory>
#include <string>

namespace fp8rl_cli {

class Reward {
 public:
  virtual ~Reward() = default;
  // The reward of one completion. `row` identifies it in error messages only
  // (e.g. the dataset line). Throws LibraryError when no reward can be given
  // (a failed external process, an answer that holds no number). Not
  // thread-safe: an external process answers one request at a time.
  virtual double score(const std::string& prompt, const std::string& completion, const std::string& answer,
                       int64_t row) = 0;
};

struct RewardOptions {
  double timeout_seconds = 30;  // cmd: the longest one request may take
};

// The reward named by `kind`; throws UsageError for an unknown kind, an empty
// pattern or program, or a pattern that does not compile. A cmd reward starts
// its process here and stops it when destroyed.
std::unique_ptr<Reward> make_reward(const std::string& kind, const RewardOptions& options = {});

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_TEXT_REWARD_H
