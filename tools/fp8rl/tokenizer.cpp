#include "tokenizer.h"

#include "cli_error.h"

namespace fp8rl_cli {

Tokenizer::Tokenizer() {
  chars_ = std::string(3, '\0') + "0123456789+=|abcdefghijklmnopqrstuvwxyz";
  for (int32_t& id : ids_) id = -1;
  for (int32_t id = 3; id < size(); ++id) ids_[static_cast<unsigned char>(chars_[static_cast<size_t>(id)])] = id;
}

std::vector<int32_t> Tokenizer::encode(const std::string& text) const {
  std::vector<int32_t> tokens;
  tokens.reserve(text.size());
  for (unsigned char c : text) {
    if (ids_[c] < 0) throw UsageError(std::string("character '") + static_cast<char>(c) + "' is not in the vocabulary");
    tokens.push_back(ids_[c]);
  }
  return tokens;
}

std::string Tokenizer::decode(const std::vector<int32_t>& tokens) const {
  static const char* const special[] = {"<pad>", "<bos>", "<eos>"};
  std::string text;
  for (int32_t t : tokens) {
    if (t >= 0 && t < 3) {
      text += special[t];
    } else if (t >= 3 && t < size()) {
      text += chars_[static_cast<size_t>(t)];
    } else {
      text += "<" + std::to_string(t) + ">";
    }
  }
  return text;
}

}  // namespace fp8rl_cli
