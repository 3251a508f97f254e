// Grow-only device scratch memory, owned by one backend and used in its
// stream's order, so one buffer can serve every call.
#pragma once

#include <cstddef>
#include <string>

#include "cuda_check.h"

namespace fp8rl::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  // At least `bytes` of device memory, 256-byte aligned (cudaMalloc's
  // guarantee). Earlier contents are lost when the buffer grows; cudaFree
  // waits for the device, so work still reading the old buffer is finished.
  void* reserve(size_t bytes) {
    if (bytes <= capacity_) return data_;
    release();
    void* fresh = nullptr;
    check_cuda(cudaMalloc(&fresh, bytes), ("cudaMalloc of " + std::to_string(bytes) + " scratch bytes").c_str());
    data_ = fresh;
    capacity_ = bytes;
    return data_;
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = nullptr;
    capacity_ = 0;
  }

  void* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace fp8rl::cuda
