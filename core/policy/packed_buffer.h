// Several small arrays in one backend buffer, so that moving them between
// host and device is one transfer, one synchronization on a GPU, instead of
// one per array. A PackedLayout gives each array an aligned byte offset; a
// PackedBuffer holds a host staging copy and the backend copy of a layout's
// bytes, and pointers into either at those offsets.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "core/policy/device_array.h"

namespace fp8rl {

// Every array starts at a multiple of this: the CUDA allocator's alignment,
// so an array in a packed buffer is aligned as a separately allocated one
// would be (kernels' vector loads stay aligned).
constexpr size_t kPackedAlignment = 256;

class PackedLayout {
 public:
  // Places count elements of T after the arrays placed so far; returns their
  // byte offset. An empty array takes no room (no padding is moved for it).
  template <class T>
  size_t add(size_t count) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t));
    if (count == 0) return bytes_;
    const size_t offset = (bytes_ + kPackedAlignment - 1) / kPackedAlignment * kPackedAlignment;
    bytes_ = offset + count * sizeof(T);
    return offset;
  }
  // The end of the last array: what a transfer of the whole layout moves.
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

// The backend must outlive it.
class PackedBuffer {
 public:
  explicit PackedBuffer(Backend& backend) : backend_(backend) {}

  // Makes both copies hold at least bytes (their contents are lost when they grow).
  void reserve(size_t bytes) {
    if (host_.size() < bytes) host_.resize(bytes);
    device_.reserve_discarding(backend_, bytes);
  }

  // Typed views at a layout's offsets. The host copy comes from operator new,
  // aligned for any T a layout accepts; offsets keep that alignment.
  template <class T>
  T* host(size_t offset) {
    return reinterpret_cast<T*>(host_.data() + offset);
  }
  template <class T>
  T* device(size_t offset) {
    return reinterpret_cast<T*>(device_.data() + offset);
  }

  // The first bytes of the host copy to the backend copy, and back.
  void upload(size_t bytes) { device_.upload(host_.data(), bytes); }
  void download(size_t bytes) { device_.download(host_.data(), bytes); }

 private:
  Backend& backend_;
  std::vector<std::byte> host_;
  DeviceArray<std::byte> device_;
};

}  // namespace fp8rl
