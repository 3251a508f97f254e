// The strict JSON parser against hand-written expectations: valid documents
// parse to exactly the expected tree, every RFC 8259 violation is rejected
// with corrupt_data and a byte position, and the writer round-trips.
#include "core/io/json.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "kernels/error.h"

namespace {

using fp8rl::Error;
using fp8rl::Status;
using fp8rl::io::Json;
using fp8rl::io::JsonLimits;
using fp8rl::io::parse_json;
using fp8rl::io::write_json;

// Parses text that must be rejected; returns the error message.
std::string rejected(const std::string& text, const JsonLimits& limits = {}) {
  try {
    parse_json(text, "doc", limits);
  } catch (const Error& error) {
    CHECK_MESSAGE(error.status() == Status::corrupt_data, text);
    return error.what();
  }
  FAIL("accepted invalid JSON: " << text);
  return {};
}

Status status_of(void (*action)()) {
  try {
    action();
  } catch (const Error& error) {
    return error.status();
  }
  return Status::ok;
}

}  // namespace

TEST_CASE("json: nested document keeps order and types") {
  const Json doc = parse_json(R"( {"b": [1, 2.5, true, false, null, {"x": []}], "a": {"k": "v"}, "e": {}} )");
  REQUIRE(doc.is_object());
  REQUIRE(doc.size() == 3);
  CHECK(doc.items()[0].first == "b");
  CHECK(doc.items()[1].first == "a");
  CHECK(doc.items()[2].first == "e");
  const Json& b = doc.at("b");
  REQUIRE(b.size() == 6);
  CHECK(b.at(0).as_int64() == 1);
  CHECK(b.at(1).as_double() == 2.5);
  CHECK_FALSE(b.at(1).is_int64());
  CHECK(b.at(2).as_bool() == true);
  CHECK(b.at(3).as_bool() == false);
  CHECK(b.at(4).is_null());
  CHECK(b.at(5).at("x").elements().empty());
  CHECK(doc.at("a").at("k").as_string() == "v");
  CHECK(doc.at("e").items().empty());
  CHECK(doc.find("missing") == nullptr);
}

TEST_CASE("json: string escapes and unicode") {
  const Json doc = parse_json(R"(["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u20AC", "\ud83d\ude00", "é€😀", "\u0000"])");
  CHECK(doc.at(0).as_string() == "\"\\/\b\f\n\r\t");
  CHECK(doc.at(1).as_string() == "A\xC3\xA9\xE2\x82\xAC");  // A, U+00E9, U+20AC
  CHECK(doc.at(2).as_string() == "\xF0\x9F\x98\x80");       // U+1F600 from a surrogate pair
  CHECK(doc.at(3).as_string() == "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  CHECK(doc.at(4).as_string() == std::string(1, '\0'));
}

TEST_CASE("json: numbers") {
  const Json doc = parse_json(
      "[0, -0, 42, -17, 9223372036854775807, -9223372036854775808, 9223372036854775808,"
      " 1e3, 1E+2, 2.5e-3, -1.25E2, 0.1, 1.7976931348623157e308, 5e-324]");
  CHECK(doc.at(0).as_int64() == 0);
  CHECK(doc.at(1).as_int64() == 0);
  CHECK(std::signbit(doc.at(1).as_double()));
  CHECK(doc.at(2).as_int64() == 42);
  CHECK(doc.at(3).as_int64() == -17);
  CHECK(doc.at(4).as_int64() == INT64_MAX);
  CHECK(doc.at(5).as_int64() == INT64_MIN);
  CHECK_FALSE(doc.at(6).is_int64());  // 2^63: double only
  CHECK(doc.at(6).as_double() == 9223372036854775808.0);
  CHECK_FALSE(doc.at(7).is_int64());  // exponent form: double only
  CHECK(doc.at(7).as_double() == 1000.0);
  CHECK(doc.at(8).as_double() == 100.0);
  CHECK(doc.at(9).as_double() == 0.0025);
  CHECK(doc.at(10).as_double() == -125.0);
  CHECK(doc.at(11).as_double() == 0.1);
  CHECK(doc.at(12).as_double() == 1.7976931348623157e308);
  CHECK(doc.at(13).as_double() == 4.9406564584124654e-324);  // smallest subnormal
}

TEST_CASE("json: top-level scalars and whitespace") {
  CHECK(parse_json(" \t\r\n 7 \n").as_int64() == 7);
  CHECK(parse_json("\"s\"").as_string() == "s");
  CHECK(parse_json("null").is_null());
}

TEST_CASE("json: invalid documents are rejected with corrupt_data") {
  const char* invalid[] = {
      "",                      // empty
      "[1, 2,]",               // trailing comma in array
      "{\"a\": 1,}",           // trailing comma in object
      "[1 2]",                 // missing comma
      "{\"a\" 1}",             // missing colon
      "{a: 1}",                // unquoted key
      "\"abc",                 // unterminated string
      "[\"abc]",               // unterminated string in array
      "\"\\x\"",               // invalid escape
      "\"\\u12G4\"",           // bad hex digit
      "\"\\u12\"",             // truncated \u escape
      "\"\\ud800\"",           // lone high surrogate
      "\"\\udc00\"",           // lone low surrogate
      "\"\\ud800\\u0041\"",    // high surrogate + non-surrogate
      "\"a\tb\"",              // raw control character
      "\"\x01\"",              // raw control character
      "\"\xC3\"",              // truncated UTF-8
      "\"\xC0\xAF\"",          // overlong UTF-8
      "\"\xED\xA0\x80\"",      // UTF-8-encoded surrogate
      "\"\xF4\x90\x80\x80\"",  // above U+10FFFF
      "{\"a\": 1, \"a\": 2}",  // duplicate key
      "01",                    // leading zero
      "-01",                   // leading zero
      "1.",                    // missing fraction digits
      ".5",                    // missing integer part
      "1e",                    // missing exponent digits
      "+1",                    // plus sign
      "-",                     // sign only
      "1e400",                 // beyond double range
      "-1e-400",               // would underflow to zero
      "NaN",
      "Infinity",
      "-Infinity",
      "nul",             // truncated literal
      "True",            // wrong case
      "[1] x",           // trailing garbage
      "{} {}",           // two documents
      "\xEF\xBB\xBF{}",  // byte-order mark
      "[1, /* c */ 2]",  // comment
  };
  for (const char* text : invalid) rejected(text);
}

TEST_CASE("json: error messages name the problem and the byte") {
  CHECK(rejected("[1, 2,]") == "doc: unexpected character, expected a value at byte 6");
  CHECK(rejected("{\"a\": 1, \"a\": 2}") == "doc: duplicate key \"a\" at byte 9");
  CHECK(rejected("  \"abc") == "doc: unterminated string at byte 2");
  CHECK(rejected("[007]") == "doc: leading zero in number at byte 1");
  CHECK(rejected("\"\\ud800\"") == "doc: high surrogate not followed by a low surrogate at byte 1");
  CHECK(rejected("1 2") == "doc: unexpected trailing characters at byte 2");
}

TEST_CASE("json: nesting and size limits") {
  const std::string ok = std::string(128, '[') + std::string(128, ']');
  CHECK(parse_json(ok).is_array());
  const std::string too_deep = std::string(129, '[') + std::string(129, ']');
  CHECK(rejected(too_deep).find("nesting deeper than 128") != std::string::npos);
  // Far deeper input must fail on the limit, not overflow the stack.
  rejected(std::string(1000000, '['));
  rejected(std::string(100000, '{') + "}", JsonLimits{1u << 20, 64});
  CHECK(rejected("[1, 2, 3]", JsonLimits{8, 128}) == "doc: input of 9 bytes exceeds the limit of 8 at byte 0");
}

TEST_CASE("json: accessors reject wrong types and missing keys") {
  CHECK(status_of([] { parse_json("1.5").as_int64(); }) == Status::invalid_argument);
  CHECK(status_of([] { parse_json("\"s\"").as_double(); }) == Status::invalid_argument);
  CHECK(status_of([] { parse_json("[]").items(); }) == Status::invalid_argument);
  CHECK(status_of([] { parse_json("{}").elements(); }) == Status::invalid_argument);
  CHECK(status_of([] { parse_json("{}").at("k"); }) == Status::invalid_argument);
  CHECK(status_of([] { parse_json("[1]").at(1); }) == Status::invalid_argument);
  CHECK(status_of([] { Json::object({{"k", Json()}, {"k", Json()}}); }) == Status::invalid_argument);
  try {
    parse_json("{\"a\": 1}").at("name");
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(std::string(error.what()) == "json: missing key \"name\"");
  }
}

TEST_CASE("json: writer escapes and round-trips") {
  const Json value = Json::object({
      {"s", Json::string("q\"b\\n\n\x01\x1f/\xC3\xA9")},
      {"n", Json::array({Json::integer(INT64_MIN), Json::number(0.1), Json::number(-2.5e-300), Json::integer(0)})},
      {"o", Json::object({{"t", Json::boolean(true)}, {"z", Json()}})},
  });
  const std::string text = write_json(value);
  CHECK(text ==
        "{\"s\":\"q\\\"b\\\\n\\n\\u0001\\u001f/\xC3\xA9\","
        "\"n\":[-9223372036854775808,0.1,-2.5e-300,0],\"o\":{\"t\":true,\"z\":null}}");
  CHECK(write_json(parse_json(text)) == text);
  CHECK(status_of([] { write_json(Json::number(NAN)); }) == Status::invalid_argument);
  CHECK(status_of([] { write_json(Json::string("\xFF")); }) == Status::invalid_argument);
}
