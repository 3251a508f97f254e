#include "json_value.h"

#include <cstdio>
#include <cstdlib>

#include "utf8.h"

namespace fp8rl_cli {

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const auto& [name, value] : members_) {
    if (name == key) return &value;
  }
  return nullptr;
}

JsonValue JsonValue::make_boolean(bool value) {
  JsonValue out(Type::boolean);
  out.boolean_ = value;
  return out;
}

JsonValue JsonValue::make_number(double value) {
  JsonValue out(Type::number);
  out.number_ = value;
  return out;
}

JsonValue JsonValue::make_string(std::string value) {
  JsonValue out(Type::string);
  out.text_ = std::move(value);
  return out;
}

JsonValue JsonValue::make_array(std::vector<JsonValue> items) {
  JsonValue out(Type::array);
  out.items_ = std::move(items);
  return out;
}

JsonValue JsonValue::make_object(std::vector<std::pair<std::string, JsonValue>> members) {
  JsonValue out(Type::object);
  out.members_ = std::move(members);
  return out;
}

const char* json_type_name(JsonValue::Type type) {
  switch (type) {
    case JsonValue::Type::null: return "null";
    case JsonValue::Type::boolean: return "a boolean";
    case JsonValue::Type::number: return "a number";
    case JsonValue::Type::string: return "a string";
    case JsonValue::Type::array: return "an array";
    case JsonValue::Type::object: return "an object";
  }
  return "unknown";
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  JsonValue document() {
    JsonValue value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the value");
    return value;
  }

 private:
  JsonValue parse_value(int depth) {
    if (depth > kMaxJsonDepth) fail("nesting deeper than " + std::to_string(kMaxJsonDepth));
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of input");
    const char c = text_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return JsonValue::make_string(parse_string());
    if (c == '-' || is_digit(c)) return JsonValue::make_number(parse_number());
    if (consume_word("true")) return JsonValue::make_boolean(true);
    if (consume_word("false")) return JsonValue::make_boolean(false);
    if (consume_word("null")) return JsonValue::make_null();
    fail("unexpected character '" + std::string(1, c) + "'");
  }

  JsonValue parse_object(int depth) {
    ++pos_;  // '{'
    std::vector<std::pair<std::string, JsonValue>> members;
    if (next_is('}')) return ++pos_, JsonValue::make_object(std::move(members));
    for (;;) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key");
      const size_t key_column = pos_ + 1;
      std::string key = parse_string();
      for (const auto& member : members) {
        if (member.first == key) fail_at("repeated key \"" + key + "\"", key_column);
      }
      expect(':');
      JsonValue value = parse_value(depth + 1);
      members.emplace_back(std::move(key), std::move(value));
      if (next_is('}')) return ++pos_, JsonValue::make_object(std::move(members));
      expect(',', "expected ',' or '}'");
    }
  }

  JsonValue parse_array(int depth) {
    ++pos_;  // '['
    std::vector<JsonValue> items;
    if (next_is(']')) return ++pos_, JsonValue::make_array(std::move(items));
    for (;;) {
      items.push_back(parse_value(depth + 1));
      if (next_is(']')) return ++pos_, JsonValue::make_array(std::move(items));
      expect(',', "expected ',' or ']'");
    }
  }

  std::string parse_string() {
    const size_t start = pos_++;  // '"'
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail_at("unterminated string", start + 1);
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') return ++pos_, out;
      if (c < 0x20) fail("raw control character in a string (must be escaped)");
      if (c == '\\') {
        parse_escape(out);
      } else {
        out += static_cast<char>(c);
        ++pos_;
      }
    }
  }

  void parse_escape(std::string& out) {
    ++pos_;  // '\'
    if (pos_ >= text_.size()) fail("unterminated escape");
    const char c = text_[pos_++];
    switch (c) {
      case '"': out += '"'; return;
      case '\\': out += '\\'; return;
      case '/': out += '/'; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'n': out += '\n'; return;
      case 'r': out += '\r'; return;
      case 't': out += '\t'; return;
      case 'u': append_utf8(out, parse_unicode_escape()); return;
      default: --pos_; fail("invalid escape '\\" + std::string(1, c) + "'");
    }
  }

  // After "\u": one BMP code point, or a high surrogate that must be followed
  // by "\u" and a low surrogate (characters beyond U+FFFF, e.g. emoji).
  uint32_t parse_unicode_escape() {
    const size_t start = pos_ - 1;
    const uint32_t first = hex4();
    if (first >= 0xDC00 && first <= 0xDFFF) fail_at("unpaired low surrogate \\u", start);
    if (first < 0xD800 || first > 0xDBFF) return first;
    if (text_.compare(pos_, 2, "\\u") != 0) fail_at("high surrogate not followed by a low one", start);
    pos_ += 2;
    const uint32_t second = hex4();
    if (second < 0xDC00 || second > 0xDFFF) fail_at("high surrogate not followed by a low one", start);
    return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
  }

  uint32_t hex4() {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (pos_ >= text_.size()) fail("truncated \\u escape");
      const char c = text_[pos_];
      uint32_t digit = 0;
      if (is_digit(c))
        digit = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        digit = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        digit = static_cast<uint32_t>(c - 'A' + 10);
      else
        fail("bad hex digit in a \\u escape");
      value = value * 16 + digit;
    }
    return value;
  }

  // The JSON grammar checked here; strtod (C locale: the CLI never calls
  // setlocale) converts the validated text.
  double parse_number() {
    const size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      fail("bad number");
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (!digits()) fail("bad number: digits must follow '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digits()) fail("bad number: digits must follow the exponent");
    }
    const std::string number = text_.substr(start, pos_ - start);
    return std::strtod(number.c_str(), nullptr);  // overflow gives +-inf, which callers check
  }

  bool digits() {
    const size_t start = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    return pos_ > start;
  }

  bool consume_word(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool next_is(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  void expect(char c, const char* message = nullptr) {
    if (!next_is(c)) fail(message ? message : std::string("expected '") + c + "'");
    ++pos_;
  }

  [[noreturn]] void fail(const std::string& what) { fail_at(what, pos_ + 1); }
  [[noreturn]] void fail_at(const std::string& what, size_t column) { throw JsonSyntaxError(what, column); }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue parse_json(const std::string& text) { return Parser(text).document(); }

std::string json_string_utf8(const std::string& text) {
  std::string out = "\"";
  for (size_t pos = 0; pos < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[pos]);
    const size_t length = utf8_sequence_length(text, pos);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++pos;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++pos;
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
      ++pos;
    } else {
      out.append(text, pos, length);
      pos += length;
    }
  }
  return out + "\"";
}

}  // namespace fp8rl_cli
