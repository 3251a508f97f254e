// An owning array in a backend's memory: allocated on construction, freed
// with the backend's deallocate. Move-only. The backend must outlive it.
#pragma once

#include <cstddef>
#include <utility>

#include "kernels/backend.h"

namespace fp8rl {

template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Backend& backend, size_t count)
      : backend_(&backend),
        data_(count ? static_cast<T*>(backend.allocate(count * sizeof(T))) : nullptr),
        count_(count) {}
  ~DeviceArray() { reset(); }
  DeviceArray(DeviceArray&& other) noexcept { swap(other); }
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    if (this != &other) {
      reset();
      swap(other);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

  // Copies count elements from host memory.
  void upload(const T* host, size_t count) {
    require(count <= count_, "DeviceArray::upload: more elements than the array holds");
    if (count) backend_->upload(data_, host, count * sizeof(T));
  }
  void download(T* host, size_t count) const {
    require(count <= count_, "DeviceArray::download: more elements than the array holds");
    if (count) backend_->download(host, data_, count * sizeof(T));
  }

  // Grows (contents are lost) to hold at least count elements.
  void reserve_discarding(Backend& backend, size_t count) {
    if (count <= count_ && backend_ == &backend) return;
    *this = DeviceArray(backend, count);
  }

 private:
  void reset() noexcept {
    if (data_) backend_->deallocate(data_);
    data_ = nullptr;
    count_ = 0;
  }
  void swap(DeviceArray& other) noexcept {
    std::swap(backend_, other.backend_);
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
  }

  Backend* backend_ = nullptr;
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace fp8rl
