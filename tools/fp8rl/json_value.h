// A complete JSON reader (RFC 8259) for one document per line: JSONL dataset
// rows and the replies of an external reward process. json.h's flat reader is
// enough for the program's own metrics files, but user data carries nested
// values, escapes and \u sequences (surrogate pairs included), which it does
// not decode.
#ifndef FP8RL_TOOLS_JSON_VALUE_H
#define FP8RL_TOOLS_JSON_VALUE_H

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fp8rl_cli {

class JsonValue {
 public:
  enum class Type { null, boolean, number, string, array, object };

  Type type() const { return type_; }
  bool is_string() const { return type_ == Type::string; }
  bool is_number() const { return type_ == Type::number; }
  bool is_object() const { return type_ == Type::object; }

  bool boolean() const { return boolean_; }
  double number() const { return number_; }            // may be +-inf when the text overflows a double
  const std::string& string() const { return text_; }  // UTF-8, escapes decoded
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  // The member named `key` of an object, or nullptr (keys are unique: the reader refuses repeats).
  const JsonValue* find(const std::string& key) const;

  static JsonValue make_null() { return JsonValue(Type::null); }
  static JsonValue make_boolean(bool value);
  static JsonValue make_number(double value);
  static JsonValue make_string(std::string value);
  static JsonValue make_array(std::vector<JsonValue> items);
  static JsonValue make_object(std::vector<std::pair<std::string, JsonValue>> members);

 private:
  explicit JsonValue(Type type) : type_(type) {}
  Type type_;
  bool boolean_ = false;
  double number_ = 0;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

// "a number", "a string", ... for messages such as `field "x" is a number, not a string`.
const char* json_type_name(JsonValue::Type type);

// A syntax error, with the 1-based byte column where it was found, so callers
// can add the file and line.
class JsonSyntaxError : public std::runtime_error {
 public:
  JsonSyntaxError(const std::string& what, size_t column)
      : std::runtime_error(what + " at column " + std::to_string(column)), column_(column) {}
  size_t column() const { return column_; }

 private:
  size_t column_;
};

// Parses exactly one value, surrounded by optional whitespace. Strict: no
// trailing commas, comments, NaN, lone surrogates, raw control characters or
// repeated keys; nesting is limited (kMaxJsonDepth) so hostile input cannot
// exhaust the stack.
constexpr int kMaxJsonDepth = 200;
JsonValue parse_json(const std::string& text);

// A JSON string literal for `text`. Unlike json_quote() it also repairs bytes
// that are not valid UTF-8 (each becomes U+FFFD), because model completions
// cut at a token limit can end inside a character, and a strict reader at the
// other end (Python's json) would reject the whole line.
std::string json_string_utf8(const std::string& text);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_JSON_VALUE_H
