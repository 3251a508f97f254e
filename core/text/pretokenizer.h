// The pre-tokenizer: splits one piece of normalized text (between added
// tokens) into the words that BPE encodes one by one, step by step as
// tokenizers' PreTokenizedString does: each step re-splits every current
// split, and empty splits are dropped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/text/regex.h"
#include "core/text/tokenizer_spec.h"

namespace fp8rl::text {

class PreTokenizer {
 public:
  // Compiles the steps' patterns; corrupt_data for a bad regex.
  PreTokenizer(const std::vector<PreTokenizerStep>& steps, const std::string& what);

  // The words of `text` (valid UTF-8), in their raw bytes: the last step's
  // byte-level mapping is the BPE model's business.
  void split(std::string_view text, std::vector<std::string>& words) const;

 private:
  struct Step {
    PreTokenizerStep spec;
    std::vector<Regex> regex;  // none, or the step's pattern (GPT-2's for ByteLevel with use_regex)
  };
  std::vector<Step> steps_;
};

// GPT-2's pattern, which tokenizers' ByteLevel pre-tokenizer splits with when use_regex is set.
extern const char* const kByteLevelPattern;

}  // namespace fp8rl::text
