#include "tasks.h"

#include <algorithm>

namespace fp8rl_cli {
namespace {

class AdditionTask : public Task {
 public:
  explicit AdditionTask(int digits) : digits_(digits) {
    for (int i = 0; i < digits; ++i) limit_ *= 10;
  }
  std::string name() const override { return "addition"; }
  Problem sample(Rng& rng) const override {
    const int64_t a = rng.below(limit_);
    const int64_t b = rng.below(limit_);
    return {std::to_string(a) + "+" + std::to_string(b) + "=", std::to_string(a + b)};
  }
  int max_prompt_chars() const override { return 2 * digits_ + 2; }
  int max_answer_chars() const override { return digits_ + 1; }

 private:
  int digits_;
  int64_t limit_ = 1;
};

class ReverseTask : public Task {
 public:
  ReverseTask(int min_length, int length, int letters) : min_length_(min_length), length_(length), letters_(letters) {}
  std::string name() const override { return "reverse"; }
  Problem sample(Rng& rng) const override {
    const int64_t n = min_length_ + rng.below(length_ - min_length_ + 1);
    std::string text;
    for (int64_t i = 0; i < n; ++i) text += static_cast<char>('a' + rng.below(letters_));
    std::string reversed(text.rbegin(), text.rend());
    return {text + "|", reversed};
  }
  int max_prompt_chars() const override { return length_ + 1; }
  int max_answer_chars() const override { return length_; }

 private:
  int min_length_;
  int length_;
  int letters_;
};

}  // namespace

std::unique_ptr<Task> make_addition_task(int digits) { return std::make_unique<AdditionTask>(digits); }

std::unique_ptr<Task> make_reverse_task(int min_length, int length, int letters) {
  return std::make_unique<ReverseTask>(min_length, length, letters);
}

}  // namespace fp8rl_cli
