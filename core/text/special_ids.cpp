#include "core/text/special_ids.h"

#include <sys/stat.h>

#include <algorithm>

#include "core/io/json.h"
#include "core/io/regular_file.h"
#include "core/text/json_fields.h"

namespace fp8rl::text {
namespace {

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

// bos_token and friends: a string, {"content": "..."} (an AddedToken), or null.
int32_t token_field_id(const JsonField& config, std::string_view key,
                       const std::function<int32_t(std::string_view)>& token_to_id) {
  const io::Json* value = config.find(key);
  if (value == nullptr || value->is_null()) return -1;
  const JsonField field = config.child(*value, key);
  const std::string& token = field.json().is_object() ? field.at("content").string() : field.string();
  const int32_t id = token_to_id(token);
  if (id < 0) field.corrupt("token \"" + token + "\" is not in the tokenizer");
  return id;
}

// bos_token_id and friends: an integer, a list of them, or null.
void id_field(const JsonField& config, std::string_view key, std::vector<int32_t>& ids) {
  const io::Json* value = config.find(key);
  if (value == nullptr || value->is_null()) return;
  const JsonField field = config.child(*value, key);
  const auto add = [&](const JsonField& item) {
    const auto id = static_cast<int32_t>(item.token_id());
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  if (field.json().is_array()) {
    for (size_t i = 0; i < field.size(); ++i) add(field[i]);
  } else {
    add(field);
  }
}

}  // namespace

SpecialTokenIds load_special_token_ids(const std::string& folder,
                                       const std::function<int32_t(std::string_view)>& token_to_id) {
  SpecialTokenIds ids;
  const std::string tokenizer_config = folder + "/tokenizer_config.json";
  if (exists(tokenizer_config)) {
    const io::Json document = io::parse_json(io::read_small_file(tokenizer_config, size_t{64} << 20), tokenizer_config);
    const JsonField config(document, tokenizer_config, "");
    config.expect(io::Json::Type::object);
    ids.bos = token_field_id(config, "bos_token", token_to_id);
    const int32_t eos = token_field_id(config, "eos_token", token_to_id);
    if (eos >= 0) ids.eos.push_back(eos);
    ids.pad = token_field_id(config, "pad_token", token_to_id);
    if (const io::Json* add_bos = config.find("add_bos_token"); add_bos != nullptr && !add_bos->is_null()) {
      ids.add_bos_token = config.child(*add_bos, "add_bos_token").boolean() ? 1 : 0;
    }
  }
  const std::string generation_config = folder + "/generation_config.json";
  if (exists(generation_config)) {
    const io::Json document =
        io::parse_json(io::read_small_file(generation_config, size_t{16} << 20), generation_config);
    const JsonField config(document, generation_config, "");
    config.expect(io::Json::Type::object);
    std::vector<int32_t> bos, pad;
    id_field(config, "bos_token_id", bos);
    id_field(config, "eos_token_id", ids.eos);
    id_field(config, "pad_token_id", pad);
    if (ids.bos < 0 && !bos.empty()) ids.bos = bos.front();
    if (ids.pad < 0 && !pad.empty()) ids.pad = pad.front();
  }
  return ids;
}

}  // namespace fp8rl::text
