// Host arrays seen by a backend. On the CPU backend the host pointer is used
// as it is; on a device backend it is copied in (inputs) or out (outputs).
#pragma once

#include <cstddef>

#include "kernels/backend.h"

namespace fp8rl {

class StagedInput {
 public:
  StagedInput(Backend& backend, const void* host, size_t bytes);
  ~StagedInput();
  StagedInput(const StagedInput&) = delete;
  StagedInput& operator=(const StagedInput&) = delete;

  template <class T>
  const T* as() const {
    return static_cast<const T*>(device_);
  }

 private:
  Backend& backend_;
  const void* device_;
  void* owned_ = nullptr;
};

class StagedOutput {
 public:
  StagedOutput(Backend& backend, void* host, size_t bytes);
  ~StagedOutput();
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;

  template <class T>
  T* as() const {
    return static_cast<T*>(device_);
  }
  // Copies the result to the host array (no-op on the CPU backend).
  void finish();

 private:
  Backend& backend_;
  void* host_;
  size_t bytes_;
  void* device_;
  void* owned_ = nullptr;
};

}  // namespace fp8rl
