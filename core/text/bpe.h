// The BPE model of a byte-level tokenizer: a word (raw bytes; each byte is
// one symbol of the byte-level alphabet) is merged pair by pair, lowest merge
// rank first and leftmost first among equal ranks, exactly as tokenizers'
// Word::merge_all does with its heap of (rank, position). Results are cached
// per word, so repeated words cost one hash lookup.
#pragma once

#include <array>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/text/tokenizer_spec.h"

namespace fp8rl::text {

class BpeModel {
 public:
  explicit BpeModel(const TokenizerSpec& spec);

  // Appends the ids of `word` (raw bytes) to `ids`. Thread-safe.
  void encode_word(std::string_view word, std::vector<uint32_t>& ids) const;

 private:
  static constexpr int32_t kMissing = -1;
  std::array<int32_t, 256> byte_ids_{};  // each byte's symbol, or kMissing
  // Vocabulary by raw bytes, for ignore_merges (tokens outside the alphabet cannot match a word).
  std::unordered_map<std::string, uint32_t> raw_vocab_;
  // (left << 32 | right) -> (rank, result)
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> merges_;
  bool ignore_merges_ = false;
  int64_t unk_id_ = -1;
  bool fuse_unk_ = false;

  static constexpr size_t kCacheCapacity = 1 << 16;  // words
  static constexpr size_t kCacheMaxWordBytes = 256;
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<uint32_t>> cache_;

  void merge(std::string_view word, std::vector<uint32_t>& ids) const;
};

}  // namespace fp8rl::text
