// The number a text gives as its answer, for the `number` reward. The rules
// follow the conventions of math datasets, strongest marker first:
//
//   1. text after the last "####" (GSM8K): the first number there;
//   2. else the content of the last \boxed{...} (MATH; braces may nest),
//      which must be a number as a whole: \boxed{\frac{1}{2}} gives none;
//   3. else the last number anywhere in the text.
//
// A marker that is present but holds no number gives none; the rules do not
// fall through, since the model did commit to that answer. A number is an
// optional sign, digits with optional thousands separators ("1,234,567":
// groups of exactly three), an optional fraction (".5", "3.25") and an
// optional exponent ("1e-3"). No fractions, percentages or words.
#ifndef FP8RL_TOOLS_NUMBER_ANSWER_H
#define FP8RL_TOOLS_NUMBER_ANSWER_H

#include <optional>
#include <string>

namespace fp8rl_cli {

std::optional<double> extract_number(const std::string& text);

// Equal within a relative tolerance of 1e-6, so "0.1" and "0.10000000001"
// agree while "1000" and "1001" do not.
bool numbers_agree(double a, double b);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_NUMBER_ANSWER_H
