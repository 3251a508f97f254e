#include "core/policy/fingerprint.h"

#include <string>
#include <vector>

#include "core/policy/compiled_model.h"

namespace fp8rl::policy {
namespace {

class Fnv1a {
 public:
  void add(const void* data, size_t bytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < bytes; ++i) hash_ = (hash_ ^ p[i]) * 0x100000001b3ull;
  }
  template <class T>
  void add_device(Backend& backend, const T* data, size_t count) {
    std::vector<T> host(count);
    if (count > 0) backend.download(host.data(), data, count * sizeof(T));
    add(host.data(), count * sizeof(T));
  }
  template <class T>
  void add_device(Backend& backend, const DeviceArray<T>& array) {
    add_device(backend, array.data(), array.size());
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace

uint64_t fingerprint(const Policy& policy) {
  Backend& backend = policy.context().backend();
  const CompiledModel& model = policy.compiled();
  Fnv1a hash;
  const std::string recipe = describe_recipe(policy.recipe());
  hash.add(recipe.data(), recipe.size());
  const AttentionScales& scales = policy.attention_scales();
  for (const std::vector<float>* values : {&scales.q, &scales.k, &scales.v})
    hash.add(values->data(), values->size() * sizeof(float));
  const auto table = static_cast<size_t>(model.vocab_size() * model.hidden_size());
  hash.add_device(backend, model.embedding(), table);
  const auto add_linear = [&](const LinearWeights& linear) {
    hash.add_device(backend, linear.bf16);
    hash.add_device(backend, linear.f32);
    hash.add_device(backend, linear.codes);
    hash.add_device(backend, linear.scales);
    hash.add_device(backend, linear.bias);
  };
  for (const CompiledLayer& layer : model.layers()) {
    for (const LinearWeights& linear : layer.linears) add_linear(linear);
    for (const CompiledExpert& expert : layer.experts)
      for (const LinearWeights& linear : expert.linears) add_linear(linear);
    for (const DeviceArray<float>& norm : layer.norms) hash.add_device(backend, norm);
  }
  hash.add_device(backend, model.final_norm(), static_cast<size_t>(model.hidden_size()));
  add_linear(model.head_weights());
  return hash.value();
}

}  // namespace fp8rl::policy
