// regex:PATTERN: 1 when the pattern matches anywhere in the completion.
// std::regex (ECMAScript grammar) is enough for format checks and avoids a
// dependency; it is slow and its matcher recurses, so very long completions
// with patterns such as (a|b)* can exhaust the stack: keep patterns simple.
#include <regex>

#include "cli_error.h"
#include "reward_kinds.h"

namespace fp8rl_cli {

namespace {

class RegexReward : public Reward {
 public:
  explicit RegexReward(const std::string& pattern) : pattern_(compile(pattern)) {}

  double score(const std::string&, const std::string& completion, const std::string&, int64_t row) override {
    try {
      return std::regex_search(completion, pattern_) ? 1.0 : 0.0;
    } catch (const std::regex_error& error) {  // error_complexity, error_stack
      throw LibraryError("regex reward, row " + std::to_string(row) + ": matching failed (" + error.what() + ")");
    }
  }

 private:
  // Compiled once here, not per completion: compiling dominates matching.
  static std::regex compile(const std::string& pattern) {
    try {
      return std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& error) {
      throw UsageError("--reward regex:" + pattern + ": not a valid ECMAScript regular expression (" + error.what() +
                       ")");
    }
  }

  std::regex pattern_;
};

}  // namespace

std::unique_ptr<Reward> make_regex_reward(const std::string& pattern) { return std::make_unique<RegexReward>(pattern); }

}  // namespace fp8rl_cli
