// Random weights for tests and from-scratch runs. Every value is a pure
// function of (seed, tensor name, element index): a counter-based generator
// keyed by the seed and the name, turned into a normal deviate by Box-Muller
// in double precision and rounded once to float. So a tensor's values do not
// depend on which other tensors the config has (adding biases leaves the
// matrices unchanged), nor on threads or platform (the only library calls are
// log, sqrt and cos in double, whose last-bit differences vanish in the
// rounding to float). Exactly: key = mix(mix(seed) ^ fnv1a64(name)) with
// mix = splitmix64_mix; element i = base + std * sqrt(-2 ln(1 - u(2i))) *
// cos(2 pi u(2i + 1)), u(c) = counter_uniform(key, c), rounded to float.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/model/model_params.h"
#include "kernels/common/counter_rng.h"
#include "kernels/error.h"

namespace fp8rl::model {
namespace {

// FNV-1a over the name, then mixed with the seed: one stream per tensor.
uint64_t tensor_key(uint64_t seed, const std::string& name) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char ch : name) hash = (hash ^ ch) * 0x100000001B3ull;
  return splitmix64_mix(splitmix64_mix(seed) ^ hash);
}

// Standard normal deviate number `index` of the stream `key` (Box-Muller,
// cosine branch only, so each element has its own pair of uniforms).
double normal(uint64_t key, uint64_t index) {
  const double u1 = 1.0 - counter_uniform(key, 2 * index);  // (0, 1]: log stays finite
  const double u2 = counter_uniform(key, 2 * index + 1);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

enum class Kind { matrix, norm, bias };

Kind kind_of(const std::vector<int64_t>& shape, const std::string& name) {
  if (shape.size() == 2) return Kind::matrix;
  const std::string suffix = ".bias";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return Kind::bias;
  }
  return Kind::norm;  // every 1-D weight of these models is an RMSNorm scale
}

}  // namespace

ModelParams random_model_params(const ModelConfig& config, uint64_t seed, const RandomInitOptions& options) {
  require(std::isfinite(options.std) && options.std >= 0.0f,
          "random_model_params: std must be finite and >= 0, got " + std::to_string(options.std));
  validate(config);
  ModelParams params;
  params.config = config;
  size_layers(params);
  const double std = options.std;
  const bool perturb = options.perturb_norms_and_biases;
  for_each_tensor(params, [&](const std::string& name, const std::vector<int64_t>& shape, HostTensor& tensor) {
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    tensor.shape = shape;
    tensor.data.resize(static_cast<size_t>(count));
    const Kind kind = kind_of(shape, name);
    const uint64_t key = tensor_key(seed, name);
    const double base = kind == Kind::norm ? 1.0 : 0.0;
    const bool draw = kind == Kind::matrix || perturb;
    for (int64_t i = 0; i < count; ++i) {
      const double value = draw ? base + std * normal(key, static_cast<uint64_t>(i)) : base;
      tensor.data[static_cast<size_t>(i)] = static_cast<float>(value);
    }
  });
  return params;
}

}  // namespace fp8rl::model
