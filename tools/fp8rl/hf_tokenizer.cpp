#include "hf_tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "cli_error.h"

namespace fp8rl_cli {

HfTokenizer::HfTokenizer(const std::string& folder) {
  check(fp8rl_tokenizer_load(folder.c_str(), &handle_), "fp8rl_tokenizer_load");
  check(fp8rl_tokenizer_vocab_size(handle_, &vocab_size_), "fp8rl_tokenizer_vocab_size");
  fp8rl_special_token_ids special;
  check(fp8rl_special_token_ids_init(&special), "fp8rl_special_token_ids_init");
  check(fp8rl_tokenizer_special_ids(handle_, &special), "fp8rl_tokenizer_special_ids");
  for (int32_t i = 0; i < std::min<int32_t>(special.num_eos, FP8RL_MAX_EOS_IDS); ++i) {
    // The two files often name the same id: once is enough for a stop list.
    if (std::find(eos_.begin(), eos_.end(), special.eos[i]) == eos_.end()) eos_.push_back(special.eos[i]);
  }
}

bool HfTokenizer::present(const std::string& folder) {
  std::error_code error;
  return std::filesystem::is_regular_file(std::filesystem::path(folder) / "tokenizer.json", error);
}

void HfTokenizer::copy_files(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                           "generation_config.json"}) {
    const fs::path source = fs::path(from) / name, target = fs::path(to) / name;
    std::error_code error;
    if (!fs::is_regular_file(source, error) || fs::exists(target, error)) continue;
    if (!fs::copy_file(source, target, error))
      throw LibraryError("cannot copy " + source.string() + " to " + target.string() + ": " + error.message());
  }
}

std::vector<int32_t> HfTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  const int32_t special = add_special_tokens ? 1 : 0;
  int64_t count = 0;
  const auto bytes = static_cast<int64_t>(text.size());
  check(fp8rl_tokenizer_encode(handle_, text.data(), bytes, special, nullptr, 0, &count), "fp8rl_tokenizer_encode");
  std::vector<int32_t> ids(static_cast<size_t>(count));
  if (count > 0) {
    check(fp8rl_tokenizer_encode(handle_, text.data(), bytes, special, ids.data(), count, &count),
          "fp8rl_tokenizer_encode");
  }
  return ids;
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  const int32_t skip = skip_special_tokens ? 1 : 0;
  const auto count = static_cast<int64_t>(ids.size());
  int64_t bytes = 0;
  check(fp8rl_tokenizer_decode(handle_, ids.data(), count, skip, nullptr, 0, &bytes), "fp8rl_tokenizer_decode");
  std::string text(static_cast<size_t>(bytes), '\0');
  if (bytes > 0) {
    check(fp8rl_tokenizer_decode(handle_, ids.data(), count, skip, text.data(), bytes, &bytes),
          "fp8rl_tokenizer_decode");
  }
  return text;
}

}  // namespace fp8rl_cli
