// A Hugging Face tokenizer.json, parsed into plain data: only the parts of
// the format that byte-level BPE uses (Llama 3, Qwen2/2.5/3, SmolLM2, GPT-2).
// Everything else is refused while parsing, by name, so a loaded spec is one
// the encoder reproduces exactly (docs/tokenizer.md lists what is supported).
//
// Usage:
//   TokenizerSpec spec = parse_tokenizer_json(text, "model/tokenizer.json");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fp8rl::text {

enum class Normalization { none, nfc };

// tokenizers' SplitDelimiterBehavior.
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// One step of the pre-tokenizer. A spec always ends with exactly one byte-level step.
struct PreTokenizerStep {
  enum class Kind { split, byte_level } kind = Kind::split;
  // split: a PCRE2 pattern (a tokenizers String pattern is kept literal).
  std::string pattern;
  bool pattern_is_literal = false;
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;
  // byte_level
  bool add_prefix_space = false;
  bool use_regex = true;
};

struct AddedTokenSpec {
  uint32_t id = 0;  // as tokenizers assigns it (the model's id when the model has the token)
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// The post-processor's effect on ids for a single sequence: the ids before
// and after it when special tokens are requested.
struct PostProcessSpec {
  std::vector<uint32_t> prefix;
  std::vector<uint32_t> suffix;
};

struct TokenizerSpec {
  Normalization normalization = Normalization::none;
  std::vector<PreTokenizerStep> pre_tokenizer;
  // model BPE
  std::vector<std::pair<std::string, uint32_t>> vocab;  // token (byte-level form) -> id
  // Merges in rank order, as ids: left + right -> result (tokenizers keeps the
  // later rank of a pair listed twice; so does the encoder).
  struct Merge {
    uint32_t left = 0, right = 0, result = 0;
  };
  std::vector<Merge> merges;
  bool ignore_merges = false;
  bool has_unk = false;
  std::string unk_token;
  bool fuse_unk = false;
  std::vector<AddedTokenSpec> added_tokens;  // file order, duplicates removed
  PostProcessSpec post_process;
  bool byte_level_decoder = true;  // false: no decoder, tokens joined with ' '
};

// Throws fp8rl::Error: corrupt_data for malformed JSON or a field of the wrong
// type, unsupported (naming the type or field) for what the encoder does not
// implement. `what` names the file in messages.
TokenizerSpec parse_tokenizer_json(std::string_view text, const std::string& what);

}  // namespace fp8rl::text
