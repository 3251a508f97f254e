#include "core/policy/kv_cache.h"

namespace fp8rl::policy {

KvCache::KvCache(Backend& backend, const CompiledModel& model, int64_t kv_dim, int64_t rows) : rows_(rows) {
  require(rows > 0 && kv_dim > 0, "KV cache: rows and kv_dim must be positive");
  for (const CompiledLayer& layer : model.layers()) {
    const size_t element = layer.precision.kv_format == KvFormat::e4m3 ? 1 : 2;
    const size_t bytes = static_cast<size_t>(rows) * static_cast<size_t>(kv_dim) * element;
    keys_.emplace_back(backend, bytes);
    values_.emplace_back(backend, bytes);
  }
}

}  // namespace fp8rl::policy
