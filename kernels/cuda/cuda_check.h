// Turns CUDA runtime failures into fp8rl::Error. Host-only.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "../error.h"

namespace fp8rl::cuda {

// Throws Error(out_of_memory) for allocation failures and Error(cuda_error)
// for everything else; `what` names the call that failed.
inline void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  // Clears the runtime's last-error slot, so a non-sticky failure is reported
  // once, here, and not again by the next unrelated cudaGetLastError.
  (void)cudaGetLastError();
  const Status kind = status == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::cuda_error;
  fail(kind,
       std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

// Checks the launch of the kernel just enqueued (bad configuration, missing
// sm_90 code). Faults inside the kernel surface at the next synchronization.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

}  // namespace fp8rl::cuda
