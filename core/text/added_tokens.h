// Added tokens (special tokens and user additions), found in the text before
// it is pre-tokenized and never split, as tokenizers' AddedVocabulary does:
// leftmost-longest, non-overlapping matches; a single_word token only where
// no word character (Rust regex \w) touches it; lstrip/rstrip take the
// whitespace (White_Space) beside the token into it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/text/regex.h"
#include "core/text/tokenizer_spec.h"

namespace fp8rl::text {

class AddedTokenMatcher {
 public:
  // A span of the text: an added token (id >= 0) or text between them (id -1).
  struct Segment {
    size_t begin, end;
    int64_t id;
  };

  // `tokens`: the tokens of this pass, in tokenizers' order (special ones
  // first); `patterns`: what each matches (its content, normalized or not).
  AddedTokenMatcher(std::vector<AddedTokenSpec> tokens, const std::vector<std::string>& patterns);

  // Segments covering `text` (valid UTF-8), in order; empty text gives none.
  void split(std::string_view text, std::vector<Segment>& segments) const;
  bool empty() const { return tokens_.empty(); }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, uint32_t>> children;  // byte -> node
    int32_t token = -1;                                  // index in tokens_ of a pattern ending here
  };
  std::vector<AddedTokenSpec> tokens_;
  std::vector<Node> trie_;
  bool first_byte_[256] = {};
  Regex word_char_;   // Rust regex's Unicode \w, one character
  Regex whitespace_;  // Rust regex's Unicode \s*, anchored

  // The longest pattern starting at text[pos]: (token index, length), or (-1, 0).
  std::pair<int32_t, size_t> longest_at(std::string_view text, size_t pos) const;
  bool word_char_before(std::string_view text, size_t pos) const;
  bool word_char_at(std::string_view text, size_t pos) const;
};

}  // namespace fp8rl::text
