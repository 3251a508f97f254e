// Typed reads of JSON fields whose errors name the file and the field path
// ("tokenizer.json: model.merges[3]: expected a string, got number"), for the
// tokenizer's config files. Internal to core/text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/io/json.h"
#include "kernels/error.h"

namespace fp8rl::text {

class JsonField {
 public:
  JsonField(const io::Json& value, std::string file, std::string path)
      : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

  const io::Json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  bool is_null() const { return value_->is_null(); }

  [[noreturn]] void corrupt(const std::string& problem) const { fail(Status::corrupt_data, where() + problem); }
  [[noreturn]] void unsupported(const std::string& problem) const { fail(Status::unsupported, where() + problem); }
  std::string where() const { return file_ + ": " + (path_.empty() ? "" : path_ + ": "); }

  void expect(io::Json::Type type) const {
    if (value_->type() != type) {
      corrupt(std::string("expected ") + io::json_type_name(type) + ", got " + io::json_type_name(value_->type()));
    }
  }
  const std::string& string() const {
    expect(io::Json::Type::string);
    return value_->as_string();
  }
  bool boolean() const {
    expect(io::Json::Type::boolean);
    return value_->as_bool();
  }
  int64_t integer() const {
    expect(io::Json::Type::number);
    if (!value_->is_int64()) corrupt("expected an integer, got " + io::write_json(*value_));
    return value_->as_int64();
  }
  uint32_t token_id() const {
    const int64_t id = integer();
    if (id < 0 || id >= (int64_t{1} << 24)) corrupt("token id " + std::to_string(id) + " is outside [0, 2^24)");
    return static_cast<uint32_t>(id);
  }
  size_t size() const {
    if (!value_->is_array() && !value_->is_object()) corrupt("expected array or object, got " + type_name());
    return value_->size();
  }
  JsonField operator[](size_t index) const {
    expect(io::Json::Type::array);
    return JsonField(value_->at(index), file_, path_ + "[" + std::to_string(index) + "]");
  }
  // A member that must be present.
  JsonField at(std::string_view key) const {
    expect(io::Json::Type::object);
    const io::Json* member = value_->find(key);
    if (member == nullptr) corrupt("missing field \"" + std::string(key) + "\"");
    return child(*member, key);
  }
  // A member that may be absent or null: `fallback` then.
  bool boolean_or(std::string_view key, bool fallback) const {
    const io::Json* member = find(key);
    return member == nullptr || member->is_null() ? fallback : child(*member, key).boolean();
  }
  const io::Json* find(std::string_view key) const {
    expect(io::Json::Type::object);
    return value_->find(key);
  }
  JsonField child(const io::Json& member, std::string_view key) const {
    return JsonField(member, file_, path_.empty() ? std::string(key) : path_ + "." + std::string(key));
  }
  std::string type_name() const { return io::json_type_name(value_->type()); }

 private:
  const io::Json* value_;
  std::string file_;
  std::string path_;
};

}  // namespace fp8rl::text
