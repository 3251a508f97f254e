// A backend that counts the host<->device traffic of another (by default the
// CPU backend): calls and bytes of upload() and download(), and explicit
// synchronize() calls. On a GPU each of these waits for the device, so tests
// assert on these counts to keep the core's synchronizations per step fixed.
// Everything else is forwarded unchanged (forwarding_backend.h), so results
// are bitwise those of the wrapped backend.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "kernels/cpu/cpu_backend.h"
#include "support/forwarding_backend.h"

namespace fp8rl::test {

struct TransferCounts {
  int64_t uploads = 0;
  int64_t downloads = 0;
  int64_t synchronizes = 0;
  size_t upload_bytes = 0;
  size_t download_bytes = 0;
};

class CountingBackend : public ForwardingBackend {
 public:
  explicit CountingBackend(int num_threads = 2) : ForwardingBackend(make_cpu_backend(num_threads)) {}
  explicit CountingBackend(std::unique_ptr<Backend> inner) : ForwardingBackend(std::move(inner)) {}

  const TransferCounts& counts() const { return counts_; }
  void reset_counts() { counts_ = TransferCounts{}; }

  void upload(void* dst, const void* src, size_t bytes) override {
    ++counts_.uploads;
    counts_.upload_bytes += bytes;
    ForwardingBackend::upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    ++counts_.downloads;
    counts_.download_bytes += bytes;
    ForwardingBackend::download(dst, src, bytes);
  }
  void synchronize() override {
    ++counts_.synchronizes;
    ForwardingBackend::synchronize();
  }

 private:
  TransferCounts counts_;
};

}  // namespace fp8rl::test
