// A strict JSON (RFC 8259) value tree, parser and writer. Made for untrusted
// file headers (safetensors, Hugging Face config.json), so the parser accepts
// exactly the RFC grammar and nothing more: no comments, no trailing commas,
// no NaN/Infinity, no byte-order mark, only valid UTF-8, no duplicate keys.
//
// Usage:
//   Json doc = parse_json(text, "config.json", JsonLimits{1 << 20});
//   int64_t layers = doc.at("num_hidden_layers").as_int64();
//   std::string out = write_json(Json::object({{"k", Json::string("v")}}));
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fp8rl::io {

// A parsed or built JSON value. Immutable once made: build values with the
// static factories and read them with the accessors, which throw
// fp8rl::Error(Status::invalid_argument) on a wrong type or a missing key.
class Json {
 public:
  enum class Type { null, boolean, number, string, array, object };
  using Member = std::pair<std::string, Json>;

  Json() = default;  // null
  static Json boolean(bool value);
  static Json number(double value);
  static Json integer(int64_t value);
  static Json string(std::string value);
  static Json array(std::vector<Json> elements);
  // Throws invalid_argument on a duplicate key; member order is kept.
  static Json object(std::vector<Member> members);

  Type type() const noexcept { return type_; }
  bool is_null() const noexcept { return type_ == Type::null; }
  bool is_number() const noexcept { return type_ == Type::number; }
  bool is_string() const noexcept { return type_ == Type::string; }
  bool is_array() const noexcept { return type_ == Type::array; }
  bool is_object() const noexcept { return type_ == Type::object; }
  // True for a number written as an integer literal that fits int64 (42, -0,
  // -9223372036854775808) or made by integer(); 1e3, 2.0 and 2^63 are doubles
  // only, so an int64 is never a rounded value.
  bool is_int64() const noexcept { return type_ == Type::number && has_int_; }

  bool as_bool() const;
  double as_double() const;
  int64_t as_int64() const;  // throws unless is_int64()
  const std::string& as_string() const;
  const std::vector<Json>& elements() const;  // array
  const std::vector<Member>& items() const;   // object, in document order

  // Object lookup: `find` returns nullptr for a missing key, `at` throws.
  const Json* find(std::string_view key) const;
  const Json& at(std::string_view key) const;
  const Json& at(size_t index) const;  // array element, bounds-checked
  size_t size() const;                 // elements or members

 private:
  Type type_ = Type::null;
  bool bool_ = false;
  bool has_int_ = false;
  double double_ = 0.0;
  int64_t int_ = 0;
  std::string string_;
  std::vector<Json> elements_;
  std::vector<Member> members_;

  friend class JsonParser;
  void require_type(Type expected) const;
};

const char* json_type_name(Json::Type type);

struct JsonLimits {
  size_t max_bytes = 16u << 20;  // longer input is rejected before parsing
  int max_depth = 128;           // arrays + objects nested deeper are rejected
};

// Parses one complete JSON document (surrounding whitespace allowed). Numbers
// become the nearest double; a literal outside the double range (1e400, and
// 1e-400, which would silently become 0) is rejected, subnormals are kept. Throws
// fp8rl::Error(Status::corrupt_data, "<what>: <reason> at byte N") on any
// deviation from RFC 8259 or the limits.
Json parse_json(std::string_view text, std::string_view what = "json", const JsonLimits& limits = {});

// Compact serialization: no whitespace, keys in member order, non-ASCII
// passed through as UTF-8, control characters escaped. Throws invalid_argument
// for a non-finite number or a string that is not valid UTF-8.
std::string write_json(const Json& value);

}  // namespace fp8rl::io
