#include "core/text/added_tokens.h"

#include <utility>

namespace fp8rl::text {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedTokenSpec> tokens, const std::vector<std::string>& patterns)
    : tokens_(std::move(tokens)),
      trie_(1),
      word_char_(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])", false, "added tokens"),
      whitespace_(R"(\s*)", false, "added tokens") {
  for (size_t index = 0; index < patterns.size(); ++index) {
    const std::string& pattern = patterns[index];
    if (pattern.empty()) continue;
    first_byte_[static_cast<uint8_t>(pattern[0])] = true;
    uint32_t node = 0;
    for (const char c : pattern) {
      const auto byte = static_cast<uint8_t>(c);
      uint32_t child = 0;
      for (const auto& [key, next] : trie_[node].children) {
        if (key == byte) child = next;
      }
      if (child == 0) {
        child = static_cast<uint32_t>(trie_.size());
        trie_[node].children.emplace_back(byte, child);
        trie_.emplace_back();
      }
      node = child;
    }
    // The first of two equal patterns wins, as the first pattern does in aho-corasick.
    if (trie_[node].token < 0) trie_[node].token = static_cast<int32_t>(index);
  }
}

std::pair<int32_t, size_t> AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  std::pair<int32_t, size_t> best{-1, 0};
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    uint32_t child = 0;
    for (const auto& [key, next] : trie_[node].children) {
      if (key == static_cast<uint8_t>(text[i])) child = next;
    }
    if (child == 0) break;
    node = child;
    if (trie_[node].token >= 0) best = {trie_[node].token, i + 1 - pos};
  }
  return best;
}

bool AddedTokenMatcher::word_char_at(std::string_view text, size_t pos) const {
  return pos < text.size() && word_char_.match_at(text, pos) != std::string_view::npos;
}

bool AddedTokenMatcher::word_char_before(std::string_view text, size_t pos) const {
  if (pos == 0) return false;
  size_t start = pos - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  return word_char_at(text.substr(0, pos), start);
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& segments) const {
  segments.clear();
  if (text.empty()) return;
  size_t covered = 0;  // tokenizers' start_offset
  size_t pos = 0;      // where the next search starts (the previous match's end, before rstrip)
  while (pos < text.size() && !tokens_.empty()) {
    // The leftmost start holding a pattern, and its longest pattern.
    std::pair<int32_t, size_t> found{-1, 0};
    size_t start = pos;
    for (; start < text.size(); ++start) {
      if (!first_byte_[static_cast<uint8_t>(text[start])]) continue;
      found = longest_at(text, start);
      if (found.first >= 0) break;
    }
    if (found.first < 0) break;
    size_t stop = start + found.second;
    pos = stop;
    const AddedTokenSpec& token = tokens_[static_cast<size_t>(found.first)];
    if (token.single_word && (word_char_before(text, start) || word_char_at(text, stop))) continue;
    if (token.lstrip) {
      // The start of the whitespace run that ends at `start`, not before what is covered.
      size_t new_start = start;
      while (new_start > covered) {
        size_t previous = new_start - 1;
        while (previous > 0 && (static_cast<uint8_t>(text[previous]) & 0xC0) == 0x80) --previous;
        if (whitespace_.match_at(text.substr(0, new_start), previous) != new_start - previous) break;
        new_start = previous;
      }
      start = new_start;
    }
    if (token.rstrip) stop += whitespace_.match_at(text, stop);
    if (covered < start) segments.push_back({covered, start, -1});
    segments.push_back({start, stop, token.id});
    covered = stop;
  }
  if (covered < text.size()) segments.push_back({covered, text.size(), -1});
}

}  // namespace fp8rl::text
