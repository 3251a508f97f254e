// A compiled PCRE2 pattern (UTF + UCP, JIT where available) with the matching
// semantics tokenizers gets from Oniguruma. Only this file knows PCRE2.
//
// Oniguruma's \s is Unicode White_Space; PCRE2's UCP \s is not (it lacks
// U+0085 and has U+180E), so \s, and \S outside classes, are spelled out as
// White_Space when the pattern is compiled. \p{L}, \p{N} come from PCRE2's
// Unicode tables (Unicode 14 in PCRE2 10.42): characters assigned later may
// split differently from tokenizers' Oniguruma.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fp8rl::text {

class Regex {
 public:
  // Throws corrupt_data ("<what>: invalid regex at offset N: <reason>") for a
  // pattern PCRE2 rejects. `literal`: the pattern is a plain string.
  Regex(const std::string& pattern, bool literal, const std::string& what);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // The non-overlapping matches in `text` (valid UTF-8), as byte ranges, left
  // to right; an empty match right after the previous match is skipped (the
  // search moves on one character), as Oniguruma's iterator does.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const;

  // Length of the match anchored at text[pos], or npos when there is none.
  size_t match_at(std::string_view text, size_t pos) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
  bool match(std::string_view text, size_t start, bool anchored, size_t& begin, size_t& end) const;
};

// The pattern with Oniguruma's \s (White_Space) spelled out for PCRE2.
std::string widen_whitespace_classes(const std::string& pattern);

}  // namespace fp8rl::text
