// The KV cache of one batch of sequences: per layer, K and V rows
// [rows, kv_dim] in that layer's format (BF16, or E4M3 codes of value /
// scale). A sequence owns a contiguous run of rows, one per position, so
// attention reads its keys as one range.
#pragma once

#include <cstdint>
#include <vector>

#include "core/policy/compiled_model.h"
#include "core/policy/device_array.h"

namespace fp8rl::policy {

// Bytes of one layer's keys (or of its values) for `rows` positions:
// [rows, kv_dim], 2 bytes a value in BF16, 1 in E4M3. The FP8 cache's
// scales are per layer (the policy's AttentionScales), not per position.
int64_t kv_layer_bytes(KvFormat format, int64_t kv_dim, int64_t rows);

// What a KvCache of `rows` positions holds for `config` under `recipe`
// (layers kept BF16 included), in bytes, from the shapes alone.
int64_t kv_cache_bytes(const model::ModelConfig& config, const Recipe& recipe, int64_t rows);

class KvCache {
 public:
  // Sized for rows positions in total, over all sequences.
  KvCache(Backend& backend, const CompiledModel& model, int64_t kv_dim, int64_t rows);

  int64_t rows() const { return rows_; }
  void* keys(size_t layer) { return keys_[layer].data(); }      // [rows, kv_dim]
  void* values(size_t layer) { return values_[layer].data(); }  // [rows, kv_dim]
  const void* keys(size_t layer) const { return keys_[layer].data(); }
  const void* values(size_t layer) const { return values_[layer].data(); }

 private:
  int64_t rows_;
  std::vector<DeviceArray<uint8_t>> keys_;
  std::vector<DeviceArray<uint8_t>> values_;
};

}  // namespace fp8rl::policy
