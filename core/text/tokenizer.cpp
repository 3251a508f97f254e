#include "core/text/tokenizer.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/io/regular_file.h"
#include "core/io/utf8.h"
#include "core/text/added_tokens.h"
#include "core/text/bpe.h"
#include "core/text/byte_level.h"
#include "core/text/normalizer.h"
#include "core/text/pretokenizer.h"
#include "core/text/special_ids.h"
#include "core/text/tokenizer_spec.h"
#include "core/text/utf8_repair.h"
#include "kernels/error.h"

namespace fp8rl::text {

bool tokenizer_available() { return true; }

struct Tokenizer::Impl {
  Normalization normalization;
  AddedTokenMatcher raw_tokens;         // matched in the text as given
  AddedTokenMatcher normalized_tokens;  // matched in the normalized text
  PreTokenizer pre_tokenizer;
  BpeModel bpe;
  PostProcessSpec post_process;
  // Decoding, by id: the token's bytes after the decoder, whether it exists, whether it is special.
  std::vector<std::string> decoded;
  std::vector<std::string> pieces;  // the token's spelling (id_to_token)
  std::vector<uint8_t> exists, special;
  std::unordered_map<std::string, uint32_t> token_ids;
  SpecialTokenIds special_ids;
  bool join_with_spaces = false;  // no decoder: tokenizers joins the tokens with ' '

  Impl(const TokenizerSpec& spec, const std::string& what, std::pair<AddedTokenMatcher, AddedTokenMatcher> matchers)
      : normalization(spec.normalization),
        raw_tokens(std::move(matchers.first)),
        normalized_tokens(std::move(matchers.second)),
        pre_tokenizer(spec.pre_tokenizer, what),
        bpe(spec),
        post_process(spec.post_process) {}

  void encode_text(std::string_view text, std::vector<int32_t>& ids) const;
};

namespace {

// tokenizers' two tries: tokens with normalized=false match the raw text; the
// others match the normalized text, by their normalized content. Special
// tokens come first, then the others, each in file order.
std::pair<AddedTokenMatcher, AddedTokenMatcher> make_matchers(const TokenizerSpec& spec) {
  std::vector<AddedTokenSpec> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  for (const bool special : {true, false}) {
    for (const AddedTokenSpec& token : spec.added_tokens) {
      if (token.special != special) continue;
      if (token.normalized) {
        normalized.push_back(token);
        normalized_patterns.push_back(spec.normalization == Normalization::nfc ? nfc(token.content) : token.content);
      } else {
        raw.push_back(token);
        raw_patterns.push_back(token.content);
      }
    }
  }
  return {AddedTokenMatcher(std::move(raw), raw_patterns),
          AddedTokenMatcher(std::move(normalized), normalized_patterns)};
}

}  // namespace

void Tokenizer::Impl::encode_text(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<AddedTokenMatcher::Segment> outer, inner;
  std::vector<std::string> words;
  std::vector<uint32_t> word_ids;
  raw_tokens.split(text, outer);
  for (const auto& piece : outer) {
    if (piece.id >= 0) {
      ids.push_back(static_cast<int32_t>(piece.id));
      continue;
    }
    const std::string_view raw = text.substr(piece.begin, piece.end - piece.begin);
    const std::string normalized = normalization == Normalization::nfc ? nfc(raw) : std::string(raw);
    normalized_tokens.split(normalized, inner);
    for (const auto& part : inner) {
      if (part.id >= 0) {
        ids.push_back(static_cast<int32_t>(part.id));
        continue;
      }
      pre_tokenizer.split(std::string_view(normalized).substr(part.begin, part.end - part.begin), words);
      for (const std::string& word : words) {
        word_ids.clear();
        bpe.encode_word(word, word_ids);
        ids.insert(ids.end(), word_ids.begin(), word_ids.end());
      }
    }
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, const std::string& what) {
  const TokenizerSpec spec = parse_tokenizer_json(tokenizer_json, what);
  if (spec.normalization == Normalization::nfc && !nfc_available()) {
    fail(Status::unsupported, what + ": the NFC normalizer needs utf8proc, and this library was built without it");
  }
  auto impl = std::make_unique<Impl>(spec, what, make_matchers(spec));
  // Decoding table: model tokens, then added tokens (which tokenizers looks up first).
  uint32_t max_id = 0;
  for (const auto& [token, id] : spec.vocab) max_id = std::max(max_id, id);
  for (const AddedTokenSpec& token : spec.added_tokens) max_id = std::max(max_id, token.id);
  const size_t size = spec.vocab.empty() && spec.added_tokens.empty() ? 0 : size_t{max_id} + 1;
  impl->decoded.resize(size);
  impl->pieces.resize(size);
  impl->exists.assign(size, 0);
  impl->special.assign(size, 0);
  std::unordered_set<std::string> special_contents;
  for (const AddedTokenSpec& token : spec.added_tokens) {
    if (token.special) special_contents.insert(token.content);
  }
  const auto set_token = [&](uint32_t id, const std::string& token) {
    impl->exists[id] = 1;
    impl->special[id] = special_contents.count(token) != 0;
    impl->decoded[id].clear();
    impl->pieces[id] = token;
    if (!spec.byte_level_decoder || !byte_level_decode(token, impl->decoded[id])) impl->decoded[id] = token;
    impl->token_ids[token] = id;
  };
  for (const auto& [token, id] : spec.vocab) set_token(id, token);
  for (const AddedTokenSpec& token : spec.added_tokens) set_token(token.id, token.content);
  impl->join_with_spaces = !spec.byte_level_decoder;
  impl->special_ids = SpecialTokenIds{};
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::load(const std::string& folder) {
  const std::string path = folder + "/tokenizer.json";
  Tokenizer tokenizer = from_json(io::read_small_file(path, size_t{256} << 20), path);
  tokenizer.impl_->special_ids =
      load_special_token_ids(folder, [&](std::string_view token) { return tokenizer.token_to_id(token); });
  return tokenizer;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::string repaired;
  if (!io::is_valid_utf8(text)) {
    repaired = utf8_replace_invalid(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  const auto append = [&](const std::vector<uint32_t>& extra) {
    for (const uint32_t id : extra) ids.push_back(static_cast<int32_t>(id));
  };
  if (add_special_tokens) append(impl_->post_process.prefix);
  impl_->encode_text(text, ids);
  if (add_special_tokens) append(impl_->post_process.suffix);
  return ids;
}

std::string Tokenizer::decode(const int32_t* ids, size_t count, bool skip_special_tokens) const {
  require(ids != nullptr || count == 0, "tokenizer decode: ids is null");
  std::string bytes;
  bool first = true;
  const bool join_with_spaces = impl_->join_with_spaces;
  for (size_t i = 0; i < count; ++i) {
    require(ids[i] >= 0, "tokenizer decode: negative token id " + std::to_string(ids[i]) + " at " + std::to_string(i));
    const auto id = static_cast<size_t>(ids[i]);
    if (id >= impl_->exists.size() || !impl_->exists[id]) continue;
    if (skip_special_tokens && impl_->special[id]) continue;
    if (join_with_spaces && !first) bytes.push_back(' ');
    bytes += impl_->decoded[id];
    first = false;
  }
  return io::is_valid_utf8(bytes) ? bytes : utf8_replace_invalid(bytes);
}

int32_t Tokenizer::token_to_id(std::string_view token) const {
  const auto found = impl_->token_ids.find(std::string(token));
  return found == impl_->token_ids.end() ? -1 : static_cast<int32_t>(found->second);
}

std::optional<std::string_view> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->exists.size() || !impl_->exists[static_cast<size_t>(id)])
    return std::nullopt;
  return std::string_view(impl_->pieces[static_cast<size_t>(id)]);
}

size_t Tokenizer::vocab_size() const { return impl_->exists.size(); }

const SpecialTokenIds& Tokenizer::special_ids() const { return impl_->special_ids; }

}  // namespace fp8rl::text
