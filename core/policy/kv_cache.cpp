#include "core/policy/kv_cache.h"

namespace fp8rl::policy {

int64_t kv_layer_bytes(KvFormat format, int64_t kv_dim, int64_t rows) {
  const int64_t element = format == KvFormat::e4m3 ? 1 : 2;
  return rows * kv_dim * element;
}

int64_t kv_cache_bytes(const model::ModelConfig& config, const Recipe& recipe, int64_t rows) {
  int64_t total = 0;
  for (int64_t layer = 0; layer < config.num_layers; ++layer) {
    const KvFormat format = layer_precision(recipe, layer, config.num_layers).kv_format;
    total += 2 * kv_layer_bytes(format, model::kv_dim(config), rows);  // keys and values
  }
  return total;
}

KvCache::KvCache(Backend& backend, const CompiledModel& model, int64_t kv_dim, int64_t rows) : rows_(rows) {
  require(rows > 0 && kv_dim > 0, "KV cache: rows and kv_dim must be positive");
  for (const CompiledLayer& layer : model.layers()) {
    const auto bytes = static_cast<size_t>(kv_layer_bytes(layer.precision.kv_format, kv_dim, rows));
    keys_.emplace_back(backend, bytes);
    values_.emplace_back(backend, bytes);
  }
}

}  // namespace fp8rl::policy
