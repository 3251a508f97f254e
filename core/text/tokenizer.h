// A Hugging Face byte-level BPE tokenizer (Llama 3, Qwen2/2.5/3, SmolLM2,
// GPT-2) that encodes and decodes exactly as the `tokenizers` library does;
// docs/tokenizer.md lists what is supported and what is refused.
//
// Usage:
//   Tokenizer tokenizer = Tokenizer::load("models/Llama-3.2-1B");  // tokenizer.json (+ configs)
//   std::vector<int32_t> ids = tokenizer.encode("Hello", /*add_special_tokens=*/true);
//   std::string text = tokenizer.decode(ids.data(), ids.size(), /*skip_special_tokens=*/true);
//
// Thread-safety: encode and decode may run concurrently on one tokenizer.
// Builds without PCRE2 have a tokenizer whose load() throws unsupported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp8rl::text {

// The special ids a model folder names (-1: none), from tokenizer_config.json
// (bos_token, eos_token, pad_token, add_bos_token) and generation_config.json
// (bos_token_id, eos_token_id, pad_token_id; its ids come after the
// tokenizer config's in `eos`, without repeats).
struct SpecialTokenIds {
  int32_t bos = -1;
  std::vector<int32_t> eos;
  int32_t pad = -1;
  int add_bos_token = -1;  // -1: not stated; 0/1: tokenizer_config.json's add_bos_token
};

// False in a build without PCRE2, whose Tokenizer::load throws unsupported.
bool tokenizer_available();

class Tokenizer {
 public:
  // Loads <folder>/tokenizer.json and, where present, tokenizer_config.json and
  // generation_config.json. Throws fp8rl::Error: io_error for an unreadable
  // file, corrupt_data for malformed contents (naming file and field),
  // unsupported for a tokenizer type or option this encoder does not implement
  // (naming it), or for a build without PCRE2.
  static Tokenizer load(const std::string& folder);
  // From the text of a tokenizer.json alone; `what` names it in errors.
  static Tokenizer from_json(std::string_view tokenizer_json, const std::string& what = "tokenizer.json");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // The ids of `text`. Text that is not valid UTF-8 is first repaired as
  // Python's bytes.decode("utf-8", "replace") does (each maximal ill-formed
  // subpart -> U+FFFD), so it encodes as `tokenizers` encodes that string.
  // add_special_tokens: the post-processor's tokens (e.g. Llama 3's BOS).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;

  // The text of `ids` (UTF-8; byte sequences that are not UTF-8 become U+FFFD
  // as in tokenizers' from_utf8_lossy). Ids that name no token are skipped, as
  // tokenizers skips them; a negative id is invalid_argument.
  std::string decode(const int32_t* ids, size_t count, bool skip_special_tokens) const;

  // The id of a token (byte-level spelling, or an added token's content), or -1.
  int32_t token_to_id(std::string_view token) const;
  // The spelling of token `id` as token_to_id takes it (byte-level, as in
  // tokenizer.json, or an added token's content; an added token wins over a
  // model token of the same id, as in tokenizers' id_to_token); nullopt for
  // an id that names no token. The view lives as long as the tokenizer.
  std::optional<std::string_view> id_to_token(int32_t id) const;
  // One past the largest id.
  size_t vocab_size() const;
  const SpecialTokenIds& special_ids() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fp8rl::text
