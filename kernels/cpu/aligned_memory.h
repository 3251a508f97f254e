// 64-byte aligned host memory (one cache line, one AVX-512 register).
#pragma once

#include <cstddef>
#include <memory>

namespace fp8rl::cpu {

constexpr size_t kAlignment = 64;

// Never returns null: failure throws fp8rl::Error(Status::out_of_memory).
// bytes == 0 still gives a distinct, freeable block.
void* aligned_allocate(size_t bytes);
void aligned_free(void* pointer) noexcept;

// Scratch floats reused from call to call. It grows to the largest size asked
// for and no further, so a backend's scratch is bounded by its largest GEMM.
class ScratchBuffer {
 public:
  // At least `count` floats, contents unspecified.
  float* reserve(size_t count);

 private:
  struct Free {
    void operator()(void* pointer) const noexcept { aligned_free(pointer); }
  };
  std::unique_ptr<void, Free> data_;
  size_t capacity_ = 0;
};

}  // namespace fp8rl::cpu
