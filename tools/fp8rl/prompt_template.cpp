#include "prompt_template.h"

#include "cli_error.h"

namespace fp8rl_cli {

namespace {

const std::string kPlaceholder = "{prompt}";

[[noreturn]] void bad_template(const std::string& text, size_t pos, const std::string& why) {
  throw UsageError("prompt template \"" + text + "\": " + why + " at character " + std::to_string(pos + 1) +
                   " (use {prompt} for the prompt, {{ and }} for literal braces)");
}

}  // namespace

PromptTemplate::PromptTemplate() : pieces_{"", ""} {}

PromptTemplate::PromptTemplate(const std::string& text) {
  std::string piece;
  for (size_t pos = 0; pos < text.size();) {
    if (text.compare(pos, 2, "{{") == 0 || text.compare(pos, 2, "}}") == 0) {
      piece += text[pos];
      pos += 2;
    } else if (text.compare(pos, kPlaceholder.size(), kPlaceholder) == 0) {
      pieces_.push_back(std::move(piece));
      piece.clear();
      pos += kPlaceholder.size();
    } else if (text[pos] == '{') {
      const size_t close = text.find('}', pos);
      if (close == std::string::npos) bad_template(text, pos, "unmatched '{'");
      bad_template(text, pos, "unknown placeholder " + text.substr(pos, close - pos + 1));
    } else if (text[pos] == '}') {
      bad_template(text, pos, "unmatched '}'");
    } else {
      piece += text[pos++];
    }
  }
  pieces_.push_back(std::move(piece));
  if (pieces_.size() < 2) {
    throw UsageError("prompt template \"" + text + "\" has no {prompt} placeholder");
  }
}

std::string PromptTemplate::apply(const std::string& prompt) const {
  std::string out = pieces_[0];
  for (size_t i = 1; i < pieces_.size(); ++i) out += prompt + pieces_[i];
  return out;
}

}  // namespace fp8rl_cli
