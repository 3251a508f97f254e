// The built-in verifiable tasks: a prompt string and its one correct answer.
#ifndef FP8RL_TOOLS_TASKS_H
#define FP8RL_TOOLS_TASKS_H

#include <cstdint>
#include <memory>
#include <string>

#include "rng.h"

namespace fp8rl_cli {

struct Problem {
  std::string prompt;  // e.g. "12+345="
  std::string answer;  // e.g. "357" (EOS is appended by the tokenizer's user)
  int64_t id = -1;     // a text dataset's row index (see text_task.h); -1 for the built-in tasks
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  virtual Problem sample(Rng& rng) const = 0;
  // The longest prompt and answer in characters (they bound the sequence and max_new_tokens).
  virtual int max_prompt_chars() const = 0;
  virtual int max_answer_chars() const = 0;
};

// "a+b=" -> "a+b" in decimal, operands of 1..digits digits (uniform in [0, 10^digits)).
std::unique_ptr<Task> make_addition_task(int digits);
// "abc|" -> "cba", strings of min_length..length letters (uniform) from the
// first `letters` of the alphabet. Long strings make long completions, over
// which the per-token mismatch of FP8 generation and BF16 training adds up.
std::unique_ptr<Task> make_reverse_task(int min_length, int length, int letters);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_TASKS_H
