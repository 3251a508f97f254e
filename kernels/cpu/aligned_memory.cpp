#include "aligned_memory.h"

#include <new>
#include <string>

#include "../error.h"

namespace fp8rl::cpu {

void* aligned_allocate(size_t bytes) {
  // Requests this large cannot succeed; refuse them before the rounding up overflows.
  if (bytes > (static_cast<size_t>(1) << 62))
    fail(Status::out_of_memory, "CPU backend: cannot allocate " + std::to_string(bytes) + " bytes");
  const size_t rounded = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* pointer = ::operator new (rounded, std::align_val_t{kAlignment}, std::nothrow);
  if (!pointer)
    fail(Status::out_of_memory, "CPU backend: out of memory allocating " + std::to_string(bytes) + " bytes");
  return pointer;
}

void aligned_free(void* pointer) noexcept {
  if (pointer) ::operator delete (pointer, std::align_val_t{kAlignment});
}

float* ScratchBuffer::reserve(size_t count) {
  if (count > capacity_) {
    data_.reset();  // free first: the old contents are not needed
    const size_t max_count = static_cast<size_t>(-1) / sizeof(float);
    data_.reset(aligned_allocate(count > max_count ? static_cast<size_t>(-1) : count * sizeof(float)));
    capacity_ = count;
  }
  return static_cast<float*>(data_.get());
}

}  // namespace fp8rl::cpu
