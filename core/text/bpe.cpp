#include "core/text/bpe.h"

#include <mutex>
#include <queue>

#include "core/text/byte_level.h"

namespace fp8rl::text {

BpeModel::BpeModel(const TokenizerSpec& spec) : ignore_merges_(spec.ignore_merges), fuse_unk_(spec.fuse_unk) {
  byte_ids_.fill(kMissing);
  raw_vocab_.reserve(spec.vocab.size());
  std::string raw;
  for (const auto& [token, id] : spec.vocab) {
    raw.clear();
    if (!byte_level_decode(token, raw)) continue;
    raw_vocab_.emplace(raw, id);
    if (raw.size() == 1) byte_ids_[static_cast<uint8_t>(raw[0])] = static_cast<int32_t>(id);
  }
  if (spec.has_unk) {
    for (const auto& [token, id] : spec.vocab) {
      if (token == spec.unk_token) unk_id_ = id;
    }
  }
  merges_.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const TokenizerSpec::Merge& merge = spec.merges[rank];
    // A pair listed twice keeps its later rank, as tokenizers' HashMap collect does.
    merges_[(uint64_t{merge.left} << 32) | merge.right] = {static_cast<uint32_t>(rank), merge.result};
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<uint32_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto found = raw_vocab_.find(std::string(word)); found != raw_vocab_.end()) {
      ids.push_back(found->second);
      return;
    }
  }
  const bool cacheable = word.size() < kCacheMaxWordBytes;
  std::string key;
  if (cacheable) {
    key.assign(word);
    std::shared_lock lock(cache_mutex_);
    if (const auto hit = cache_.find(key); hit != cache_.end()) {
      ids.insert(ids.end(), hit->second.begin(), hit->second.end());
      return;
    }
  }
  const size_t first = ids.size();
  merge(word, ids);
  if (cacheable) {
    std::unique_lock lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity)
      cache_.emplace(std::move(key), std::vector<uint32_t>(ids.begin() + first, ids.end()));
  }
}

namespace {

struct Symbol {
  uint32_t id;
  int32_t prev, next;
  bool alive;
};

struct Candidate {
  uint32_t rank;
  uint32_t pos;
  uint32_t result;
};

// Min-heap on (rank, pos), as tokenizers orders its Merge entries.
struct LaterFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

}  // namespace

void BpeModel::merge(std::string_view word, std::vector<uint32_t>& ids) const {
  // The initial symbols: one per byte; a byte outside the vocabulary becomes
  // the unknown token (consecutive ones fused when fuse_unk), or is dropped
  // when there is none, as tokenizers' merge_word does.
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  bool pending_unk = false;
  const auto push = [&](uint32_t id) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, true});
  };
  for (const char c : word) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id != kMissing) {
      if (pending_unk) push(static_cast<uint32_t>(unk_id_));
      pending_unk = false;
      push(static_cast<uint32_t>(id));
    } else if (unk_id_ >= 0) {
      if (pending_unk && !fuse_unk_) push(static_cast<uint32_t>(unk_id_));
      pending_unk = true;
    }
  }
  if (pending_unk) push(static_cast<uint32_t>(unk_id_));
  if (symbols.empty()) return;
  symbols.back().next = -1;

  const auto lookup = [&](uint32_t left, uint32_t right) {
    const auto found = merges_.find((uint64_t{left} << 32) | right);
    return found == merges_.end() ? nullptr : &found->second;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, LaterFirst> queue;
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const auto* merge = lookup(symbols[i].id, symbols[i + 1].id)) {
      queue.push({merge->first, static_cast<uint32_t>(i), merge->second});
    }
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& current = symbols[top.pos];
    if (!current.alive || current.next < 0) continue;
    const Symbol right = symbols[current.next];
    // A stale entry: the pair at this position changed since it was queued.
    const auto* now = lookup(current.id, right.id);
    if (now == nullptr || now->second != top.result) continue;
    current.id = top.result;
    symbols[current.next].alive = false;
    current.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = static_cast<int32_t>(top.pos);
    if (current.prev >= 0) {
      if (const auto* merge = lookup(symbols[current.prev].id, current.id)) {
        queue.push({merge->first, static_cast<uint32_t>(current.prev), merge->second});
      }
    }
    if (current.next >= 0) {
      if (const auto* merge = lookup(current.id, symbols[current.next].id))
        queue.push({merge->first, top.pos, merge->second});
    }
  }
  for (const Symbol& symbol : symbols) {
    if (symbol.alive) ids.push_back(symbol.id);
  }
}

}  // namespace fp8rl::text
