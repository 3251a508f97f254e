// The strict RFC 8259 parser: recursive descent over a string_view, with a
// nesting limit so hostile input cannot exhaust the stack.
#include <charconv>
#include <unordered_set>

#include "core/io/json.h"
#include "core/io/utf8.h"
#include "kernels/error.h"

namespace fp8rl::io {

class JsonParser {
 public:
  JsonParser(std::string_view text, std::string_view what, int max_depth)
      : text_(text), what_(what), max_depth_(max_depth) {}

  Json parse_document() {
    skip_whitespace();
    Json value = parse_value(0);
    skip_whitespace();
    if (pos_ != text_.size()) error("unexpected trailing characters");
    return value;
  }

 private:
  std::string_view text_;
  std::string_view what_;
  int max_depth_;
  size_t pos_ = 0;

  [[noreturn]] void error(const std::string& reason) const { error_at(reason, pos_); }
  [[noreturn]] void error_at(const std::string& reason, size_t at) const {
    fail(Status::corrupt_data, std::string(what_) + ": " + reason + " at byte " + std::to_string(at));
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void expect(char c) {
    if (at_end()) error(std::string("unexpected end of input, expected '") + c + "'");
    if (text_[pos_] != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }

  void skip_whitespace() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  Json parse_value(int depth) {
    if (at_end()) error("unexpected end of input, expected a value");
    switch (peek()) {
      case '{': return parse_object(depth + 1);
      case '[': return parse_array(depth + 1);
      case '"': return Json::string(parse_string());
      case 't': parse_literal("true"); return Json::boolean(true);
      case 'f': parse_literal("false"); return Json::boolean(false);
      case 'n': parse_literal("null"); return Json();
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return parse_number();
        error("unexpected character, expected a value");
    }
  }

  void parse_literal(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) error("invalid literal");
    pos_ += literal.size();
  }

  void check_depth(int depth) const {
    if (depth > max_depth_) error("nesting deeper than " + std::to_string(max_depth_));
  }

  Json parse_array(int depth) {
    check_depth(depth);
    expect('[');
    std::vector<Json> elements;
    skip_whitespace();
    if (peek() == ']') {
      ++pos_;
      return Json::array(std::move(elements));
    }
    while (true) {
      skip_whitespace();
      elements.push_back(parse_value(depth));
      skip_whitespace();
      if (peek() == ']') break;
      expect(',');
    }
    ++pos_;
    return Json::array(std::move(elements));
  }

  Json parse_object(int depth) {
    check_depth(depth);
    expect('{');
    Json object;
    object.type_ = Json::Type::object;
    // The set owns copies of the keys: views into members_ would dangle when
    // the vector grows. Hashing keeps duplicate detection linear.
    std::unordered_set<std::string> keys;
    skip_whitespace();
    if (peek() == '}') {
      ++pos_;
      return object;
    }
    while (true) {
      skip_whitespace();
      const size_t key_pos = pos_;
      if (peek() != '"') error("expected a string key");
      std::string key = parse_string();
      if (!keys.insert(key).second) error_at("duplicate key \"" + key + "\"", key_pos);
      skip_whitespace();
      expect(':');
      skip_whitespace();
      object.members_.emplace_back(std::move(key), parse_value(depth));
      skip_whitespace();
      if (peek() == '}') break;
      expect(',');
    }
    ++pos_;
    return object;
  }

  std::string parse_string() {
    const size_t start = pos_;
    expect('"');
    std::string out;
    while (true) {
      if (at_end()) error_at("unterminated string", start);
      const char c = text_[pos_];
      if (c == '"') break;
      if (static_cast<uint8_t>(c) < 0x20) error("unescaped control character in string");
      if (c == '\\') {
        parse_escape(out);
        continue;
      }
      const size_t length = utf8_sequence_length(text_, pos_);
      if (length == 0) error("invalid UTF-8 in string");
      out.append(text_.substr(pos_, length));
      pos_ += length;
    }
    ++pos_;
    return out;
  }

  void parse_escape(std::string& out) {
    const size_t escape_pos = pos_;
    ++pos_;  // backslash
    if (at_end()) error_at("unterminated escape", escape_pos);
    const char c = text_[pos_++];
    switch (c) {
      case '"': out.push_back('"'); return;
      case '\\': out.push_back('\\'); return;
      case '/': out.push_back('/'); return;
      case 'b': out.push_back('\b'); return;
      case 'f': out.push_back('\f'); return;
      case 'n': out.push_back('\n'); return;
      case 'r': out.push_back('\r'); return;
      case 't': out.push_back('\t'); return;
      case 'u': append_utf8(out, parse_unicode_escape(escape_pos)); return;
      default: error_at("invalid escape", escape_pos);
    }
  }

  // After "\u": one BMP scalar, or a high surrogate that must be followed by
  // "\u" and a low surrogate (UTF-16 pair); lone surrogates are rejected.
  uint32_t parse_unicode_escape(size_t escape_pos) {
    const uint32_t first = parse_hex4(escape_pos);
    if (first >= 0xDC00 && first <= 0xDFFF) error_at("lone low surrogate in \\u escape", escape_pos);
    if (first < 0xD800 || first > 0xDBFF) return first;
    if (text_.substr(pos_, 2) != "\\u") error_at("high surrogate not followed by a low surrogate", escape_pos);
    pos_ += 2;
    const uint32_t second = parse_hex4(escape_pos);
    if (second < 0xDC00 || second > 0xDFFF) error_at("high surrogate not followed by a low surrogate", escape_pos);
    return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
  }

  uint32_t parse_hex4(size_t escape_pos) {
    if (text_.size() - pos_ < 4) error_at("truncated \\u escape", escape_pos);
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      uint32_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        error_at("invalid hex digit in \\u escape", escape_pos);
      }
      value = value * 16 + digit;
    }
    return value;
  }

  void skip_digits() {
    while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
  }

  bool is_digit() const { return !at_end() && peek() >= '0' && peek() <= '9'; }

  // Grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
  Json parse_number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (!is_digit()) error("expected a digit");
    if (peek() == '0') {
      ++pos_;
      if (is_digit()) error_at("leading zero in number", start);
    } else {
      skip_digits();
    }
    bool integral = true;
    if (peek() == '.') {
      ++pos_;
      if (!is_digit()) error("expected a digit after the decimal point");
      skip_digits();
      integral = false;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit()) error("expected a digit in the exponent");
      skip_digits();
      integral = false;
    }
    return make_number(text_.substr(start, pos_ - start), integral, start);
  }

  // The double always comes from the literal itself (so "-0" keeps its
  // sign); integer literals that fit also keep their exact int64.
  Json make_number(std::string_view literal, bool integral, size_t start) const {
    const char* first = literal.data();
    const char* last = first + literal.size();
    double value = 0.0;
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range) error_at("number out of double range", start);
    if (ec != std::errc() || ptr != last) error_at("malformed number", start);
    Json number = Json::number(value);
    if (integral) {
      const auto [int_ptr, int_ec] = std::from_chars(first, last, number.int_);
      number.has_int_ = int_ec == std::errc() && int_ptr == last;
    }
    return number;
  }
};

Json parse_json(std::string_view text, std::string_view what, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    fail(Status::corrupt_data, std::string(what) + ": input of " + std::to_string(text.size()) +
                                   " bytes exceeds the limit of " + std::to_string(limits.max_bytes) + " at byte 0");
  }
  return JsonParser(text, what, limits.max_depth).parse_document();
}

}  // namespace fp8rl::io
