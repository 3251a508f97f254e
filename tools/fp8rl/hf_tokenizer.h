// A model folder's Hugging Face tokenizer through the C API (fp8rl_tokenizer):
// text <-> ids as `tokenizers` encodes and decodes them, and the folder's
// special ids. Unlike tokenizer.h's character vocabulary of the built-in
// tasks, this is the vocabulary the model was trained with.
#ifndef FP8RL_TOOLS_HF_TOKENIZER_H
#define FP8RL_TOOLS_HF_TOKENIZER_H

#include <fp8rl/fp8rl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fp8rl_cli {

class HfTokenizer {
 public:
  // Loads `folder`/tokenizer.json (with tokenizer_config.json and
  // generation_config.json where present); LibraryError when it cannot.
  explicit HfTokenizer(const std::string& folder);
  ~HfTokenizer() { fp8rl_tokenizer_destroy(handle_); }
  HfTokenizer(const HfTokenizer&) = delete;
  HfTokenizer& operator=(const HfTokenizer&) = delete;

  // Whether `folder` holds a tokenizer.json (a folder without one is not an error
  // for commands that can do without text).
  static bool present(const std::string& folder);
  // Copies the tokenizer files of model folder `from` (tokenizer.json,
  // tokenizer_config.json, special_tokens_map.json, generation_config.json:
  // those present and not already in `to`) into `to`, so that a trained
  // policy saved there is a whole model folder again. LibraryError on failure.
  static void copy_files(const std::string& from, const std::string& to);

  // add_special_tokens: the post-processor's tokens too (e.g. Llama 3's BOS).
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens) const;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
  int64_t vocab_size() const { return vocab_size_; }
  // The folder's end-of-sequence ids (tokenizer_config.json's, then
  // generation_config.json's); empty when it names none.
  const std::vector<int32_t>& eos_ids() const { return eos_; }

 private:
  fp8rl_tokenizer* handle_ = nullptr;
  int64_t vocab_size_ = 0;
  std::vector<int32_t> eos_;
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_HF_TOKENIZER_H
