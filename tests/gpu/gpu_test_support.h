// Helpers shared by the GPU tests: the two backends, device buffers, random
// inputs and bitwise comparison.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common/bf16_codec.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"

namespace fp8rl::test {

// One of each for the whole run: creating a CUDA context is slow.
inline Backend& gpu() {
  static const std::unique_ptr<Backend> backend = make_cuda_backend(0);
  return *backend;
}
inline Backend& cpu() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend(2);
  return *backend;
}

// Memory of one backend, freed by it.
class Buffer {
 public:
  Buffer(Backend& backend, size_t bytes) : backend_(&backend), data_(backend.allocate(bytes)) {}
  Buffer(Buffer&& other) noexcept : backend_(other.backend_), data_(other.data_) { other.data_ = nullptr; }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer& operator=(Buffer&&) = delete;
  ~Buffer() { backend_->deallocate(data_); }

  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  Backend* backend_;
  void* data_;
};

template <typename T>
Buffer to_backend(Backend& backend, const std::vector<T>& host) {
  Buffer buffer(backend, host.size() * sizeof(T));
  backend.upload(buffer.as<void>(), host.data(), host.size() * sizeof(T));
  return buffer;
}

template <typename T>
std::vector<T> from_backend(Backend& backend, const Buffer& buffer, size_t count) {
  std::vector<T> host(count);
  backend.download(host.data(), buffer.as<void>(), count * sizeof(T));
  return host;
}

// Normal values whose magnitude varies by up to 2^+-spread between rows, so
// blocks get very different scales.
inline std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed, int spread = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-spread, spread);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float magnitude = std::ldexp(1.0f, exponent(rng));
    for (int64_t c = 0; c < cols; ++c) values[static_cast<size_t>(r * cols + c)] = normal(rng) * magnitude;
  }
  return values;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = bf16_encode(values[i]);
  return bits;
}

inline uint32_t bits_of(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// Index of the first element that differs bit for bit, or -1. NaN equals any
// NaN: GPU arithmetic returns the canonical NaN, the CPU propagates payloads.
template <typename T>
int64_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      if (bits_of(a[i]) != bits_of(b[i])) return static_cast<int64_t>(i);
    } else if (a[i] != b[i]) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

// Checks that two results are equal bit for bit; on failure names the first
// differing element and both values (floats in hex-float and as bits).
template <typename T>
void check_bitwise(const std::vector<T>& expected, const std::vector<T>& actual, const std::string& what) {
  const int64_t diff = first_difference(expected, actual);
  if (diff == -1 || expected.size() != actual.size()) {
    CHECK_MESSAGE(diff == -1, what, ": sizes ", expected.size(), " and ", actual.size());
    return;
  }
  char values[96];
  if constexpr (std::is_same_v<T, float>)
    std::snprintf(values, sizeof values, "CPU %a (0x%08x), GPU %a (0x%08x)", static_cast<double>(expected[diff]),
                  bits_of(expected[diff]), static_cast<double>(actual[diff]), bits_of(actual[diff]));
  else
    std::snprintf(values, sizeof values, "CPU %lld (0x%llx), GPU %lld (0x%llx)", static_cast<long long>(expected[diff]),
                  static_cast<unsigned long long>(expected[diff]), static_cast<long long>(actual[diff]),
                  static_cast<unsigned long long>(actual[diff]));
  CHECK_MESSAGE(diff == -1, what, ": first different element at ", diff, ": ", values);
}

// The status of the Error that f throws, or ok.
inline Status thrown_status(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& error) {
    MESSAGE("fp8rl::Error: ", error.what());
    return error.status();
  }
  return Status::ok;
}

}  // namespace fp8rl::test
