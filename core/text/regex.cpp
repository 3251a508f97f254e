#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/text/regex.h"

#include <pcre2.h>

#include <string>

#include "kernels/error.h"

namespace fp8rl::text {

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  std::string what;
  ~Compiled() { pcre2_code_free(code); }
};

// Unicode's White_Space: Oniguruma's \s (and Rust regex's). PCRE2's UCP \s
// differs (it lacks U+0085 and has U+180E), so it is spelled out.
constexpr const char* kWhiteSpace =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string widen_whitespace_classes(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      ++i;
      if (next == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (next == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' (after an optional '^') right at the start is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

Regex::Regex(const std::string& pattern, bool literal, const std::string& what)
    : compiled_(std::make_unique<Compiled>()) {
  compiled_->what = what;
  const std::string source = literal ? pattern : widen_whitespace_classes(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0u);
  compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(), options, &error, &offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    fail(Status::corrupt_data, what + ": invalid regex at offset " + std::to_string(offset) + ": " +
                                   reinterpret_cast<const char*>(message) + " (pattern: " + pattern + ")");
  }
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

namespace {

struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (data == nullptr) fail(Status::out_of_memory, "regex: cannot allocate match data");
  }
  ~MatchData() { pcre2_match_data_free(data); }
};

// A JIT stack large enough for long inputs, made only when the default 32 KiB overflows.
struct BigJitStack {
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  BigJitStack() {
    if (stack == nullptr || context == nullptr) fail(Status::out_of_memory, "regex: cannot allocate a JIT stack");
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~BigJitStack() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
};

}  // namespace

bool Regex::match(std::string_view text, size_t start, bool anchored, size_t& begin, size_t& end) const {
  MatchData data(compiled_->code);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // The caller passes valid UTF-8 only (the tokenizer repairs its input first).
  const uint32_t options = PCRE2_NO_UTF_CHECK | (anchored ? PCRE2_ANCHORED : 0u);
  int rc = pcre2_match(compiled_->code, subject, text.size(), start, options, data.data, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    static thread_local BigJitStack big;
    rc = pcre2_match(compiled_->code, subject, text.size(), start, options, data.data, big.context);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(rc, message, sizeof(message));
    fail(Status::invalid_argument, compiled_->what + ": regex match failed: " + reinterpret_cast<const char*>(message));
  }
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.data);
  begin = ovector[0];
  end = ovector[1];
  return true;
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  matches.clear();
  size_t search_from = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (search_from <= text.size()) {
    size_t begin = 0, end = 0;
    if (!match(text, search_from, false, begin, end)) break;
    if (begin == end && have_last && last_end == end) {
      if (search_from >= text.size()) break;
      ++search_from;  // one character on
      while (search_from < text.size() && (static_cast<uint8_t>(text[search_from]) & 0xC0) == 0x80) ++search_from;
      continue;
    }
    matches.emplace_back(begin, end);
    have_last = true;
    last_end = end;
    search_from = end;
  }
}

size_t Regex::match_at(std::string_view text, size_t pos) const {
  size_t begin = 0, end = 0;
  if (!match(text, pos, true, begin, end)) return std::string_view::npos;
  return end - begin;
}

}  // namespace fp8rl::text
