#include "json.h"

#include <cmath>
#include <cstdio>

#include "cli_error.h"

namespace fp8rl_cli {

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void JsonObject::key(const std::string& name) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_quote(name) + ": ";
}

JsonObject& JsonObject::add(const std::string& name, double value) { return add_raw(name, json_number(value)); }

JsonObject& JsonObject::add(const std::string& name, long long value) { return add_raw(name, std::to_string(value)); }

JsonObject& JsonObject::add(const std::string& name, const std::string& value) {
  return add_raw(name, json_quote(value));
}

JsonObject& JsonObject::add_bool(const std::string& name, bool value) {
  return add_raw(name, value ? "true" : "false");
}

JsonObject& JsonObject::add_raw(const std::string& name, const std::string& json) {
  key(name);
  body_ += json;
  return *this;
}

namespace {

class FlatParser {
 public:
  explicit FlatParser(const std::string& text) : text_(text) {}

  std::map<std::string, std::string> object() {
    std::map<std::string, std::string> out;
    expect('{');
    if (peek() == '}') return ++pos_, out;
    for (;;) {
      const std::string name = string();
      expect(':');
      out[name] = peek() == '"' ? string() : scalar();
      if (peek() == '}') return ++pos_, out;
      expect(',');
    }
  }

 private:
  char peek() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    if (pos_ >= text_.size()) fail();
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail();
    ++pos_;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_++];
    }
    expect('"');
    return out;
  }
  std::string scalar() {
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' && text_[pos_] != ' ') ++pos_;
    if (pos_ == start) fail();
    return text_.substr(start, pos_ - start);
  }
  [[noreturn]] void fail() { throw LibraryError("malformed JSON line: " + text_); }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

std::map<std::string, std::string> parse_flat_json(const std::string& line) { return FlatParser(line).object(); }

}  // namespace fp8rl_cli
