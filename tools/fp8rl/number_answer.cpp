#include "number_answer.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace fp8rl_cli {

namespace {

bool is_digit(const std::string& s, size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; }

bool is_alnum(const std::string& s, size_t i) {
  const char c = s[i];
  return is_digit(s, i) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

size_t skip_digits(const std::string& s, size_t i) {
  while (is_digit(s, i)) ++i;
  return i;
}

// The integer part, with thousands separators when the first group has one
// to three digits and every later group exactly three ("1,23" is 1 then 23).
size_t scan_integer(const std::string& s, size_t i) {
  const size_t start = i;
  i = skip_digits(s, i);
  if (i - start > 3) return i;
  while (i < s.size() && s[i] == ',' && is_digit(s, i + 1) && is_digit(s, i + 2) && is_digit(s, i + 3) &&
         !is_digit(s, i + 4)) {
    i += 4;
  }
  return i;
}

// A number starting exactly at `start`: `end` receives one past its text (or
// `start` when there is none), and the value is nullopt when the text
// overflows a double. A sign counts only where it cannot be a binary minus
// ("3-2" is 3 then 2).
std::optional<double> scan_number(const std::string& s, size_t start, size_t& end) {
  end = start;
  size_t i = start;
  if ((s[i] == '-' || s[i] == '+') && (i == 0 || !is_alnum(s, i - 1))) ++i;
  const size_t integer_start = i;
  i = scan_integer(s, i);
  const bool has_integer = i > integer_start;
  if (i < s.size() && s[i] == '.' && is_digit(s, i + 1))
    i = skip_digits(s, i + 1);
  else if (!has_integer)
    return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
    if (is_digit(s, j)) i = skip_digits(s, j);
  }
  end = i;
  std::string text = s.substr(start, i - start);
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  if (text[0] == '+') text.erase(0, 1);  // from_chars takes no plus sign
  double value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// The first (`last` false) or the last number in `s`. An overflowing number
// still counts as one, so "1e999" gives none rather than 999.
std::optional<double> find_number(const std::string& s, bool last) {
  std::optional<double> found;
  for (size_t i = 0; i < s.size();) {
    size_t end = i;
    const bool may_start = i == 0 || !is_digit(s, i - 1);  // not inside a longer number
    const auto value = may_start ? scan_number(s, i, end) : std::nullopt;
    if (end == i) {
      ++i;
      continue;
    }
    if (!last) return value;
    found = value;
    i = end;
  }
  return found;
}

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

// The content of the last \boxed{...}, or nullopt when its braces never close.
std::optional<std::string> boxed_content(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return s.substr(open + 1, i - open - 1);
  }
  return std::nullopt;
}

std::optional<double> whole_number(const std::string& text) {
  const std::string content = trim(text);
  if (content.empty()) return std::nullopt;
  size_t end = 0;
  const auto value = scan_number(content, 0, end);
  if (!value || end != content.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<double> extract_number(const std::string& text) {
  const size_t hashes = text.rfind("####");
  if (hashes != std::string::npos) return find_number(text.substr(hashes + 4), false);
  const std::string box = "\\boxed{";
  const size_t boxed = text.rfind(box);
  if (boxed != std::string::npos) {
    const auto content = boxed_content(text, boxed + box.size() - 1);
    return content ? whole_number(*content) : std::nullopt;
  }
  return find_number(text, true);
}

bool numbers_agree(double a, double b) {
  return a == b || std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b));
}

}  // namespace fp8rl_cli
