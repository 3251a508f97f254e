#include "text_reward.h"

#include <cmath>

#include "cli_error.h"
#include "reward_kinds.h"

namespace fp8rl_cli {

namespace {

const char* const kKinds = "exact, number, regex:PATTERN or cmd:PROGRAM";

// The text after "prefix:" in `kind`, which must not be empty.
std::string argument(const std::string& kind, const std::string& prefix, const char* what) {
  const std::string value = kind.substr(prefix.size());
  if (value.empty()) throw UsageError("--reward " + kind + ": the " + what + " after '" + prefix + "' is empty");
  return value;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::unique_ptr<Reward> make_reward(const std::string& kind, const RewardOptions& options) {
  if (kind == "exact") return make_exact_reward();
  if (kind == "number") return make_number_reward();
  if (starts_with(kind, "regex:")) return make_regex_reward(argument(kind, "regex:", "pattern"));
  if (starts_with(kind, "cmd:")) {
    if (!(options.timeout_seconds > 0) || !std::isfinite(options.timeout_seconds)) {
      throw UsageError("reward timeout must be a positive number of seconds");
    }
    return make_command_reward(argument(kind, "cmd:", "program"), options.timeout_seconds);
  }
  throw UsageError("unknown reward '" + kind + "': expected " + kKinds);
}

}  // namespace fp8rl_cli
