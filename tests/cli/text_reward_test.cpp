// The built-in text rewards (exact, number, regex), the number extraction
// behind `number`, and the --reward KIND factory.
#include "tools/fp8rl/text_reward.h"

#include <doctest/doctest.h>

#include <string>

#include "tools/fp8rl/cli_error.h"
#include "tools/fp8rl/number_answer.h"

using fp8rl_cli::extract_number;
using fp8rl_cli::LibraryError;
using fp8rl_cli::make_reward;
using fp8rl_cli::UsageError;

namespace {

double score(const std::string& kind, const std::string& completion, const std::string& answer) {
  return make_reward(kind)->score("prompt", completion, answer, 0);
}

std::string usage_error(const std::string& kind) {
  try {
    make_reward(kind);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("number_answer: the marker conventions, strongest first") {
  CHECK(extract_number("so 5 + 7 = 12\n#### 1,234") == 1234);
  CHECK(extract_number("#### 3 #### $-42.") == -42);                 // the last ####
  CHECK(extract_number("2 apples #### none").has_value() == false);  // a marker without a number: no fallback
  CHECK(extract_number("we get 7 so \\boxed{12}") == 12);
  CHECK(extract_number("\\boxed{1} then \\boxed{ -2.5 }") == -2.5);     // the last box
  CHECK(extract_number("\\boxed{\\frac{1}{2}}").has_value() == false);  // not a number as a whole
  CHECK(extract_number("\\boxed{{3}}").has_value() == false);
  CHECK(extract_number("2 and \\boxed{3").has_value() == false);  // never closed: truncated output
  CHECK(extract_number("12 #### 4 \\boxed{5}") == 4);             // #### outranks \boxed
}

TEST_CASE("number_answer: the last number in plain text") {
  CHECK(extract_number("The answer is -3.5.") == -3.5);
  CHECK(extract_number("2 apples and 3 pears") == 3);
  CHECK(extract_number("no number here").has_value() == false);
  CHECK(extract_number("").has_value() == false);
  CHECK(extract_number("costs $1,234,567 in total") == 1234567);
  CHECK(extract_number("pairs 1,23") == 23);  // not a thousands group
  CHECK(extract_number("1234,567") == 567);   // a first group of four is no thousands number
  CHECK(extract_number("about 1.5e3 units") == 1500);
  CHECK(extract_number("2eggs") == 2);  // an 'e' without digits is no exponent
  CHECK(extract_number("x = +.5") == 0.5);
  CHECK(extract_number("5-3") == 3);  // a minus between digits is an operator
  CHECK(extract_number("(-7)") == -7);
  CHECK(extract_number("1e999").has_value() == false);  // not finite
}

TEST_CASE("reward exact: equal up to whitespace") {
  CHECK(score("exact", "42", "42") == 1);
  CHECK(score("exact", "  the   answer\n\tis 42 \n", "the answer is 42") == 1);
  CHECK(score("exact", "the answer is 42", "the answer is 43") == 0);
  CHECK(score("exact", "theansweris42", "the answer is 42") == 0);  // whitespace is collapsed, not removed
  CHECK(score("exact", "", " \n") == 1);
  CHECK(score("exact", "Paris", "paris") == 0);  // case matters
}

TEST_CASE("reward number: numeric comparison with the answer parsed the same way") {
  CHECK(score("number", "so the total is #### 1,234", "1234") == 1);
  CHECK(score("number", "The answer is -3.5.", "#### -3.50") == 1);
  CHECK(score("number", "2 apples and 3 pears", "3") == 1);
  CHECK(score("number", "2 apples and 3 pears", "2") == 0);
  CHECK(score("number", "\\boxed{\\frac{1}{2}}", "0.5") == 0);
  CHECK(score("number", "I do not know", "7") == 0);
  CHECK(score("number", "0.30000000000000004", "0.3") == 1);  // within the relative tolerance
  CHECK(score("number", "1001", "1000") == 0);
  CHECK_THROWS_WITH_AS(make_reward("number")->score("p", "3", "three", 17),
                       "number reward, row 17: the answer \"three\" holds no number", LibraryError);
}

TEST_CASE("reward regex: a match anywhere, compiled once") {
  CHECK(score("regex:\\\\boxed\\{[0-9]+\\}", "so \\boxed{12}.", "") == 1);
  CHECK(score("regex:^\\d+$", "123", "") == 1);
  CHECK(score("regex:^\\d+$", "123 apples", "") == 0);
  CHECK(score("regex:a|b", "xyz", "") == 0);
  auto reward = make_reward("regex:<answer>.*</answer>");
  CHECK(reward->score("p", "<answer>7</answer>", "7", 0) == 1);
  CHECK(reward->score("p", "<answer>7", "7", 1) == 0);
}

TEST_CASE("reward factory: unknown kinds and bad arguments are usage errors") {
  CHECK(usage_error("exactly") == "unknown reward 'exactly': expected exact, number, regex:PATTERN or cmd:PROGRAM");
  CHECK(usage_error("") == "unknown reward '': expected exact, number, regex:PATTERN or cmd:PROGRAM");
  CHECK(usage_error("regex:") == "--reward regex:: the pattern after 'regex:' is empty");
  CHECK(usage_error("cmd:") == "--reward cmd:: the program after 'cmd:' is empty");
  CHECK(usage_error("regex:(unclosed").find("--reward regex:(unclosed: not a valid ECMAScript regular expression (") ==
        0);
  fp8rl_cli::RewardOptions options;
  options.timeout_seconds = 0;
  CHECK_THROWS_WITH_AS(make_reward("cmd:cat", options), "reward timeout must be a positive number of seconds",
                       UsageError);
}
