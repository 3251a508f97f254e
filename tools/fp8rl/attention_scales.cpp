#include "attention_scales.h"

#include "checkpoint.h"
#include "cli_error.h"
#include "json.h"
#include "json_value.h"
#include "model_setup.h"

namespace fp8rl_cli {
namespace {

std::string json_array(const std::vector<float>& values) {
  std::string text = "[";
  for (float v : values) text += std::string(text.size() > 1 ? ", " : "") + json_number(v);
  return text + "]";
}

std::vector<float> float_array(const JsonValue& root, const char* key, const std::string& path) {
  const JsonValue* value = root.is_object() ? root.find(key) : nullptr;
  if (value == nullptr || value->type() != JsonValue::Type::array)
    throw LibraryError(path + ": no \"" + key + "\" array of attention scales");
  std::vector<float> values;
  for (const JsonValue& item : value->items()) {
    if (!item.is_number()) throw LibraryError(path + ": \"" + key + "\" holds " + json_type_name(item.type()));
    values.push_back(static_cast<float>(item.number()));
  }
  return values;
}

}  // namespace

AttentionScaleSet get_attention_scales(const Policy& policy) {
  const int64_t layers = policy_config(policy).num_layers;
  AttentionScaleSet s{std::vector<float>(layers), std::vector<float>(layers), std::vector<float>(layers)};
  check(fp8rl_policy_get_attention_scales(policy.get(), s.q.data(), s.k.data(), s.v.data(), layers),
        "fp8rl_policy_get_attention_scales");
  return s;
}

void set_attention_scales(const Policy& policy, const AttentionScaleSet& s) {
  check(fp8rl_policy_set_attention_scales(policy.get(), s.q.data(), s.k.data(), s.v.data(),
                                          static_cast<int64_t>(s.q.size())),
        "fp8rl_policy_set_attention_scales");
}

void write_attention_scales(const std::string& path, const AttentionScaleSet& s) {
  JsonObject o;
  o.add_raw("q", json_array(s.q)).add_raw("k", json_array(s.k)).add_raw("v", json_array(s.v));
  write_text_file(path, o.str() + "\n");
}

AttentionScaleSet read_attention_scales(const std::string& path) {
  const JsonValue root = read_json_file(path);
  AttentionScaleSet s{float_array(root, "q", path), float_array(root, "k", path), float_array(root, "v", path)};
  if (s.k.size() != s.q.size() || s.v.size() != s.q.size())
    throw LibraryError(path + ": the q, k and v arrays differ in length");
  return s;
}

}  // namespace fp8rl_cli
