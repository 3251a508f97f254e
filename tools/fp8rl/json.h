// Just enough JSON for metrics.jsonl and summary.json: a writer for flat
// objects, and a reader of flat objects of numbers, strings, booleans and null.
#ifndef FP8RL_TOOLS_JSON_H
#define FP8RL_TOOLS_JSON_H

#include <map>
#include <string>

namespace fp8rl_cli {

class JsonObject {
 public:
  JsonObject& add(const std::string& key, double value);  // non-finite -> null
  JsonObject& add(const std::string& key, long long value);
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add_bool(const std::string& key, bool value);
  JsonObject& add_raw(const std::string& key, const std::string& json);  // an already encoded value
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& name);
  std::string body_;
};

std::string json_quote(const std::string& text);
// Numbers print with 17 significant digits, so a value reads back bit for bit.
std::string json_number(double value);

// A parsed flat object: strings unquoted, numbers as their text, null as "null".
// Throws LibraryError on malformed input.
std::map<std::string, std::string> parse_flat_json(const std::string& line);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_JSON_H
