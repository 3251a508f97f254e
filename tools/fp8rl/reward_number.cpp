// number: the completion's number against the answer's, both found by
// extract_number(), so a GSM8K answer ("... #### 72") needs no preprocessing.
#include "cli_error.h"
#include "number_answer.h"
#include "reward_kinds.h"

namespace fp8rl_cli {

namespace {

class NumberReward : public Reward {
 public:
  double score(const std::string&, const std::string& completion, const std::string& answer, int64_t row) override {
    // An answer without a number is a dataset mistake: every completion would
    // score 0 without a word, so it is an error instead.
    const auto expected = extract_number(answer);
    if (!expected) {
      throw LibraryError("number reward, row " + std::to_string(row) + ": the answer \"" + answer +
                         "\" holds no number");
    }
    const auto given = extract_number(completion);
    return given && numbers_agree(*given, *expected) ? 1.0 : 0.0;
  }
};

}  // namespace

std::unique_ptr<Reward> make_number_reward() { return std::make_unique<NumberReward>(); }

}  // namespace fp8rl_cli
