// The character-level vocabulary of the built-in tasks: PAD, BOS, EOS, the
// digits, '+', '=', '|' and the lowercase letters, one token each.
#ifndef FP8RL_TOOLS_TOKENIZER_H
#define FP8RL_TOOLS_TOKENIZER_H

#include <cstdint>
#include <string>
#include <vector>

namespace fp8rl_cli {

class Tokenizer {
 public:
  static constexpr int32_t kPad = 0;
  static constexpr int32_t kBos = 1;
  static constexpr int32_t kEos = 2;

  Tokenizer();
  // Tokens in use; a model needs at least this many vocabulary entries.
  int32_t size() const { return static_cast<int32_t>(chars_.size()); }
  // The vocabulary size of built-in models: size() rounded up to a multiple of 8.
  int64_t padded_size() const { return (size() + 7) / 8 * 8; }

  // Throws UsageError for a character outside the vocabulary.
  std::vector<int32_t> encode(const std::string& text) const;
  // Special tokens show as <pad>, <bos>, <eos>; unknown ids as <id>.
  std::string decode(const std::vector<int32_t>& tokens) const;

 private:
  std::string chars_;  // chars_[id]; the special tokens hold '\0'
  int32_t ids_[256];
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_TOKENIZER_H
