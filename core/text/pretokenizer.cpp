#include "core/text/pretokenizer.h"

#include <algorithm>
#include <utility>

namespace fp8rl::text {

const char* const kByteLevelPattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

struct Piece {
  size_t begin, end;
  bool is_match;
};

// tokenizers' NormalizedString::split: the matches and the text between them,
// grouped by the delimiter behavior; removed pieces come back as empty.
void apply_behavior(SplitBehavior behavior, const std::vector<Piece>& pieces,
                    std::vector<std::pair<size_t, size_t>>& out) {
  out.clear();
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::isolated:
      for (const Piece& piece : pieces) out.emplace_back(piece.begin, piece.end);
      return;
    case SplitBehavior::removed:
      for (const Piece& piece : pieces) {
        if (!piece.is_match) out.emplace_back(piece.begin, piece.end);
      }
      return;
    case SplitBehavior::contiguous:
      for (const Piece& piece : pieces) {
        if (piece.is_match == previous_match && !out.empty()) {
          out.back().second = piece.end;
        } else {
          out.emplace_back(piece.begin, piece.end);
        }
        previous_match = piece.is_match;
      }
      return;
    case SplitBehavior::merged_with_previous:
      for (const Piece& piece : pieces) {
        if (piece.is_match && !previous_match && !out.empty()) {
          out.back().second = piece.end;
        } else {
          out.emplace_back(piece.begin, piece.end);
        }
        previous_match = piece.is_match;
      }
      return;
    case SplitBehavior::merged_with_next:
      for (size_t i = pieces.size(); i-- > 0;) {
        const Piece& piece = pieces[i];
        if (piece.is_match && !previous_match && !out.empty()) {
          out.back().first = piece.begin;
        } else {
          out.emplace_back(piece.begin, piece.end);
        }
        previous_match = piece.is_match;
      }
      std::reverse(out.begin(), out.end());
      return;
  }
}

// Pattern::find_matches for a regex: matches and gaps covering `text`.
void find_pieces(const Regex& regex, std::string_view text, bool invert,
                 std::vector<std::pair<size_t, size_t>>& matches, std::vector<Piece>& pieces) {
  pieces.clear();
  if (text.empty()) {
    pieces.push_back({0, 0, false});
    return;
  }
  regex.find_all(text, matches);
  size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous != begin) pieces.push_back({previous, begin, invert});
    pieces.push_back({begin, end, !invert});
    previous = end;
  }
  if (previous != text.size()) pieces.push_back({previous, text.size(), invert});
}

}  // namespace

PreTokenizer::PreTokenizer(const std::vector<PreTokenizerStep>& steps, const std::string& what) {
  for (const PreTokenizerStep& spec : steps) {
    Step step{spec, {}};
    if (spec.kind == PreTokenizerStep::Kind::split) {
      step.regex.emplace_back(spec.pattern, spec.pattern_is_literal, what + ": pre_tokenizer Split");
    } else if (spec.use_regex) {
      step.regex.emplace_back(kByteLevelPattern, false, what + ": ByteLevel");
    }
    steps_.push_back(std::move(step));
  }
}

void PreTokenizer::split(std::string_view text, std::vector<std::string>& words) const {
  words.clear();
  if (!text.empty()) words.emplace_back(text);
  std::vector<std::string> next;
  std::vector<std::pair<size_t, size_t>> matches, ranges;
  std::vector<Piece> pieces;
  for (const Step& step : steps_) {
    next.clear();
    for (std::string& word : words) {
      const bool is_byte_level = step.spec.kind == PreTokenizerStep::Kind::byte_level;
      if (is_byte_level && step.spec.add_prefix_space && word.front() != ' ') word.insert(word.begin(), ' ');
      if (step.regex.empty()) {
        next.push_back(std::move(word));
        continue;
      }
      find_pieces(step.regex.front(), word, is_byte_level ? false : step.spec.invert, matches, pieces);
      apply_behavior(is_byte_level ? SplitBehavior::isolated : step.spec.behavior, pieces, ranges);
      for (const auto& [begin, end] : ranges) {
        if (end > begin) next.emplace_back(word, begin, end - begin);
      }
    }
    words.swap(next);
  }
}

}  // namespace fp8rl::text
