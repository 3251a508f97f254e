#include "core/policy/rope_table.h"

#include <algorithm>
#include <cmath>

namespace fp8rl::policy {

std::vector<double> rope_inverse_frequencies(const model::ModelConfig& config) {
  const int64_t half = config.head_dim / 2;
  std::vector<double> inverse(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inverse[static_cast<size_t>(i)] =
        1.0 / std::pow(config.rope_theta, static_cast<double>(2 * i) / static_cast<double>(config.head_dim));
  }
  const model::RopeScaling& scaling = config.rope_scaling;
  if (scaling.type != model::RopeScalingType::llama3) return inverse;
  // Llama 3.1: keep high frequencies, divide low ones by factor, interpolate between.
  const double original = static_cast<double>(scaling.original_max_position_embeddings);
  const double low_freq_wavelength = original / scaling.low_freq_factor;
  const double high_freq_wavelength = original / scaling.high_freq_factor;
  for (double& frequency : inverse) {
    const double wavelength = 2.0 * M_PI / frequency;
    if (wavelength < high_freq_wavelength) continue;
    if (wavelength > low_freq_wavelength) {
      frequency /= scaling.factor;
      continue;
    }
    const double smooth =
        (original / wavelength - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor);
    frequency = (1.0 - smooth) * frequency / scaling.factor + smooth * frequency;
  }
  return inverse;
}

RopeTable::RopeTable(const model::ModelConfig& config) : inverse_frequencies_(rope_inverse_frequencies(config)) {}

void RopeTable::ensure(Backend& backend, int64_t positions) {
  if (positions <= positions_) return;
  // Doubling keeps the number of rebuilds logarithmic in the longest sequence.
  const int64_t target = std::max({positions, 2 * positions_, int64_t{256}});
  const size_t half = inverse_frequencies_.size();
  std::vector<float> cos_host(static_cast<size_t>(target) * half), sin_host(cos_host.size());
  for (int64_t p = 0; p < target; ++p) {
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inverse_frequencies_[i];
      cos_host[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(angle));
      sin_host[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  DeviceArray<float> cos_device(backend, cos_host.size()), sin_device(backend, sin_host.size());
  cos_device.upload(cos_host.data(), cos_host.size());
  sin_device.upload(sin_host.data(), sin_host.size());
  cos_ = std::move(cos_device);
  sin_ = std::move(sin_device);
  positions_ = target;
}

}  // namespace fp8rl::policy
