// The JSON reader behind JSONL datasets and reward-program replies.
#include "tools/fp8rl/json_value.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using fp8rl_cli::json_string_utf8;
using fp8rl_cli::JsonSyntaxError;
using fp8rl_cli::JsonValue;
using fp8rl_cli::parse_json;

namespace {

std::string string_of(const std::string& json) { return parse_json(json).string(); }

std::string syntax_error(const std::string& json) {
  try {
    parse_json(json);
  } catch (const JsonSyntaxError& error) {
    return error.what();
  }
  return "(parsed)";
}

}  // namespace

TEST_CASE("json_value: nested values, numbers and literals") {
  const JsonValue v = parse_json(R"( {"a": [1, -2.5e3, true, false, null, {"b": "c"}], "n": 0} )");
  REQUIRE(v.is_object());
  const JsonValue* a = v.find("a");
  REQUIRE(a != nullptr);
  REQUIRE(a->items().size() == 6);
  CHECK(a->items()[0].number() == 1);
  CHECK(a->items()[1].number() == -2500);
  CHECK(a->items()[2].boolean());
  CHECK(a->items()[4].type() == JsonValue::Type::null);
  CHECK(a->items()[5].find("b")->string() == "c");
  CHECK(v.find("missing") == nullptr);
  CHECK(std::isinf(parse_json("1e999").number()));  // overflow is the caller's to refuse
}

TEST_CASE("json_value: string escapes, \\u sequences and surrogate pairs") {
  CHECK(string_of(R"("a\"b\\c\/d\b\f\n\r\t")") == "a\"b\\c/d\b\f\n\r\t");
  CHECK(string_of(R"("\u00e9")") == "\xC3\xA9");                // é
  CHECK(string_of(R"("\u20AC")") == "\xE2\x82\xAC");            // €
  CHECK(string_of(R"("\ud83d\ude00")") == "\xF0\x9F\x98\x80");  // 😀, a surrogate pair
  CHECK(string_of("\"\xF0\x9F\x98\x80 raw\"") == "\xF0\x9F\x98\x80 raw");
  CHECK(string_of(R"("\u0000")") == std::string(1, '\0'));
}

TEST_CASE("json_value: malformed input is refused with a column") {
  CHECK(syntax_error(R"({"a": 1,})") == "expected a string key at column 9");
  CHECK(syntax_error(R"({"a" 1})") == "expected ':' at column 6");
  CHECK(syntax_error(R"({"a": 1} x)") == "unexpected text after the value at column 10");
  CHECK(syntax_error(R"("abc)") == "unterminated string at column 1");
  CHECK(syntax_error(R"("\x")") == "invalid escape '\\x' at column 3");
  CHECK(syntax_error(R"("\ud83d")") == "high surrogate not followed by a low one at column 2");
  CHECK(syntax_error(R"("\ude00")") == "unpaired low surrogate \\u at column 2");
  CHECK(syntax_error(R"("\u12g4")") == "bad hex digit in a \\u escape at column 6");
  CHECK(syntax_error("\"a\tb\"") == "raw control character in a string (must be escaped) at column 3");
  CHECK(syntax_error(R"({"a": 1, "a": 2})") == "repeated key \"a\" at column 10");
  CHECK(syntax_error("01") == "unexpected text after the value at column 2");
  CHECK(syntax_error("1.") == "bad number: digits must follow '.' at column 3");
  CHECK(syntax_error("NaN") == "unexpected character 'N' at column 1");
  CHECK(syntax_error("") == "unexpected end of input at column 1");
  CHECK(syntax_error(std::string(300, '[')).find("nesting deeper than") == 0);
}

TEST_CASE("json_value: strings written for a strict reader") {
  CHECK(json_string_utf8("a\"b\\c\n") == R"("a\"b\\c\u000a")");
  CHECK(json_string_utf8("\xC3\xA9\xF0\x9F\x98\x80") == "\"\xC3\xA9\xF0\x9F\x98\x80\"");
  // A character cut in half, a stray continuation byte, an overlong '/' and a surrogate: each byte U+FFFD.
  CHECK(json_string_utf8("a\xF0\x9F") == "\"a\xEF\xBF\xBD\xEF\xBF\xBD\"");
  CHECK(json_string_utf8("\x80") == "\"\xEF\xBF\xBD\"");
  CHECK(json_string_utf8("\xC0\xAF") == "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  CHECK(json_string_utf8("\xED\xA0\x80").find("\xED") == std::string::npos);
  // What it writes reads back.
  CHECK(parse_json(json_string_utf8("x\ty\x01")).string() == "x\ty\x01");
}
