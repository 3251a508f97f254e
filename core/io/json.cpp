// JSON values (factories, checked accessors) and the writer. The parser is in
// json_parse.cpp.
#include "core/io/json.h"

#include <charconv>
#include <cmath>
#include <unordered_set>

#include "core/io/utf8.h"
#include "kernels/error.h"

namespace fp8rl::io {

const char* json_type_name(Json::Type type) {
  switch (type) {
    case Json::Type::null: return "null";
    case Json::Type::boolean: return "boolean";
    case Json::Type::number: return "number";
    case Json::Type::string: return "string";
    case Json::Type::array: return "array";
    case Json::Type::object: return "object";
  }
  return "unknown";
}

Json Json::boolean(bool value) {
  Json json;
  json.type_ = Type::boolean;
  json.bool_ = value;
  return json;
}

Json Json::number(double value) {
  Json json;
  json.type_ = Type::number;
  json.double_ = value;
  return json;
}

Json Json::integer(int64_t value) {
  Json json = number(static_cast<double>(value));
  json.has_int_ = true;
  json.int_ = value;
  return json;
}

Json Json::string(std::string value) {
  Json json;
  json.type_ = Type::string;
  json.string_ = std::move(value);
  return json;
}

Json Json::array(std::vector<Json> elements) {
  Json json;
  json.type_ = Type::array;
  json.elements_ = std::move(elements);
  return json;
}

Json Json::object(std::vector<Member> members) {
  std::unordered_set<std::string_view> keys;
  for (const Member& member : members) {
    require(keys.insert(member.first).second, "json: duplicate object key \"" + member.first + "\"");
  }
  Json json;
  json.type_ = Type::object;
  json.members_ = std::move(members);
  return json;
}

void Json::require_type(Type expected) const {
  if (type_ != expected) {
    fail(Status::invalid_argument,
         std::string("json: expected ") + json_type_name(expected) + ", got " + json_type_name(type_));
  }
}

bool Json::as_bool() const {
  require_type(Type::boolean);
  return bool_;
}

double Json::as_double() const {
  require_type(Type::number);
  return double_;
}

int64_t Json::as_int64() const {
  require_type(Type::number);
  if (!has_int_) fail(Status::invalid_argument, "json: number " + write_json(*this) + " is not an int64 integer");
  return int_;
}

const std::string& Json::as_string() const {
  require_type(Type::string);
  return string_;
}

const std::vector<Json>& Json::elements() const {
  require_type(Type::array);
  return elements_;
}

const std::vector<Json::Member>& Json::items() const {
  require_type(Type::object);
  return members_;
}

const Json* Json::find(std::string_view key) const {
  for (const Member& member : items()) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

const Json& Json::at(std::string_view key) const {
  const Json* value = find(key);
  if (!value) fail(Status::invalid_argument, "json: missing key \"" + std::string(key) + "\"");
  return *value;
}

const Json& Json::at(size_t index) const {
  const std::vector<Json>& all = elements();
  if (index >= all.size()) {
    fail(Status::invalid_argument,
         "json: index " + std::to_string(index) + " out of range for array of " + std::to_string(all.size()));
  }
  return all[index];
}

size_t Json::size() const {
  if (type_ == Type::object) return members_.size();
  return elements().size();
}

namespace {

void write_string(std::string_view text, std::string& out) {
  require(is_valid_utf8(text), "json: string is not valid UTF-8");
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char c : text) {
    const auto byte = static_cast<uint8_t>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (byte < 0x20) {
          out += "\\u00";
          out.push_back(kHex[byte >> 4]);
          out.push_back(kHex[byte & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void write_number(const Json& value, std::string& out) {
  char buffer[32];
  std::to_chars_result result;
  if (value.is_int64()) {
    result = std::to_chars(buffer, buffer + sizeof buffer, value.as_int64());
  } else {
    const double number = value.as_double();
    require(std::isfinite(number), "json: cannot write a non-finite number");
    // Shortest form that reads back to the same double.
    result = std::to_chars(buffer, buffer + sizeof buffer, number);
  }
  out.append(buffer, result.ptr);
}

void write_value(const Json& value, std::string& out) {
  switch (value.type()) {
    case Json::Type::null: out += "null"; break;
    case Json::Type::boolean: out += value.as_bool() ? "true" : "false"; break;
    case Json::Type::number: write_number(value, out); break;
    case Json::Type::string: write_string(value.as_string(), out); break;
    case Json::Type::array: {
      out.push_back('[');
      const char* separator = "";
      for (const Json& element : value.elements()) {
        out += separator;
        write_value(element, out);
        separator = ",";
      }
      out.push_back(']');
      break;
    }
    case Json::Type::object: {
      out.push_back('{');
      const char* separator = "";
      for (const Json::Member& member : value.items()) {
        out += separator;
        write_string(member.first, out);
        out.push_back(':');
        write_value(member.second, out);
        separator = ",";
      }
      out.push_back('}');
      break;
    }
  }
}

}  // namespace

std::string write_json(const Json& value) {
  std::string out;
  write_value(value, out);
  return out;
}

}  // namespace fp8rl::io
