// exact: the completion equals the answer up to whitespace, so a trailing
// newline or a double space the model emits is not a wrong answer.
#include "reward_kinds.h"

namespace fp8rl_cli {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Trimmed, each run of whitespace one space.
std::string normalize_whitespace(const std::string& text) {
  std::string out;
  bool pending_space = false;
  for (const char c : text) {
    if (is_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

class ExactReward : public Reward {
 public:
  double score(const std::string&, const std::string& completion, const std::string& answer, int64_t) override {
    return normalize_whitespace(completion) == normalize_whitespace(answer) ? 1.0 : 0.0;
  }
};

}  // namespace

std::unique_ptr<Reward> make_exact_reward() { return std::make_unique<ExactReward>(); }

}  // namespace fp8rl_cli
