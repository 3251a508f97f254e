// A stand-in for a device backend: computes with the CPU backend but reports
// kind() == cuda, so the core stages every host array through allocate /
// upload / download, as it does for a real GPU. Device allocations are filled
// with a poison byte and counted, so tests see stale reads and leaks.
#pragma once

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <set>
#include <string>

#include "kernels/cpu/cpu_backend.h"

namespace fp8rl::test {

class FakeDeviceBackend final : public Backend {
 public:
  FakeDeviceBackend() : cpu_(make_cpu_backend(2)) {}

  BackendKind kind() const override { return BackendKind::cuda; }
  std::string description() const override { return "fake device over " + cpu_->description(); }

  void* allocate(size_t bytes) override {
    void* pointer = std::malloc(bytes == 0 ? 1 : bytes);
    if (!pointer) fail(Status::out_of_memory, "fake device: out of memory");
    std::memset(pointer, 0xCD, bytes);
    live_.insert(pointer);
    return pointer;
  }
  void deallocate(void* pointer) noexcept override {
    live_.erase(pointer);
    std::free(pointer);
  }
  void upload(void* dst, const void* src, size_t bytes) override { transfer(dst, src, bytes, dst); }
  void download(void* dst, const void* src, size_t bytes) override { transfer(dst, src, bytes, src); }
  void synchronize() override {}

  void quantize(const void* input, DType dtype, int64_t rows, int64_t cols, const QuantSpec& spec, uint8_t* codes,
                float* scales) override {
    require_device({input, codes, scales});
    cpu_->quantize(input, dtype, rows, cols, spec, codes, scales);
  }
  void dequantize(const Fp8Matrix& matrix, float* output) override {
    require_device({matrix.codes, matrix.scales, output});
    cpu_->dequantize(matrix, output);
  }
  void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) override {
    require_device({a.codes, a.scales, w.codes, w.scales, c});
    if (fail_gemm) fail(Status::cuda_error, "fake device: injected GEMM failure");
    cpu_->gemm_fp8(a, w, c, c_dtype);
  }
  void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                 DType c_dtype) override {
    require_device({a, w, c});
    cpu_->gemm_bf16(a, w, m, n, k, c, c_dtype);
  }

  size_t live_allocations() const { return live_.size(); }
  bool fail_gemm = false;

 private:
  // Operations must only ever see device memory, never a host pointer.
  void require_device(std::initializer_list<const void*> pointers) const {
    for (const void* p : pointers)
      if (!live_.count(const_cast<void*>(p))) fail(Status::internal, "fake device: got a host pointer");
  }
  void transfer(void* dst, const void* src, size_t bytes, const void* device_side) {
    require_device({device_side});
    std::memcpy(dst, src, bytes);
  }

  std::unique_ptr<Backend> cpu_;
  std::set<void*> live_;
};

}  // namespace fp8rl::test
