// Owning wrappers for cuBLASLt's opaque descriptors, and the status check.
// Host-only.
#pragma once

#include <cublasLt.h>

#include <memory>
#include <string>
#include <type_traits>

#include "../error.h"

namespace fp8rl::cuda {

// NOT_SUPPORTED and ARCH_MISMATCH mean "this GPU or configuration cannot do
// it", which callers see as Status::unsupported.
inline void check_cublas(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  Status kind = Status::cuda_error;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) kind = Status::out_of_memory;
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) kind = Status::unsupported;
  fail(kind, "cuBLASLt: " + what + " failed: " + cublasLtGetStatusName(status) + " (" +
                 cublasLtGetStatusString(status) + ")");
}

template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
struct LtDestroy {
  void operator()(Handle handle) const noexcept { (void)Destroy(handle); }
};

using LtHandle = std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, LtDestroy<cublasLtHandle_t, cublasLtDestroy>>;
using LtMatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>,
                                     LtDestroy<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
using LtLayout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>,
                                 LtDestroy<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;
using LtPreference = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                                     LtDestroy<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>>;

template <typename T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value, const char* name) {
  check_cublas(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value),
               std::string("setting matmul attribute ") + name);
}

template <typename T>
void set_preference(cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
                    const T& value, const char* name) {
  check_cublas(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value),
               std::string("setting preference ") + name);
}

}  // namespace fp8rl::cuda
