// Block-scaled FP8 GEMM, C[M,N] = A[M,K] . W[N,K]^T, through cuBLASLt on sm_90.
//
// cuBLASLt's rules (cuBLAS docs, cublasLtMatmul and "128-element 1D and
// 128x128 2D block scaling"), and how we meet them:
//  - TN only, E4M3, FP32 compute and scale type, BF16/FP16/FP32 output,
//    fast accumulation off: lt_gemm.h.
//  - 16-byte aligned pointers and leading dimensions, M and N multiples of 4:
//    operands are padded into scratch with zero codes when K % 16, M % 4 or
//    N % 8 (16-byte output rows for BF16) is not 0 or a pointer is
//    misaligned, and the output goes through scratch likewise. Zero codes add
//    nothing to the sums, and padding never changes the number of 128-blocks.
//  - Scale tensors in cuBLASLt's own layouts: lt_scales.h.
// A must be in 1x128 tiles; W in 128x128 blocks (VEC128 x BLK128x128) or in
// 1x128 tiles (VEC128 x VEC128, wgrad). BLK128x128 on both sides is not a
// combination cuBLASLt offers, and backend.h never asks for it.
#pragma once

#include <cuda_runtime.h>

#include <mutex>

#include "../backend.h"
#include "device_buffer.h"
#include "lt_gemm.h"

namespace fp8rl::cuda {

class Fp8Gemm {
 public:
  explicit Fp8Gemm(LtGemm& lt) : lt_(lt) {}

  // Enqueues C = A . W^T on `stream`; c is [a.rows, w.rows] of c_dtype. Thread-safe.
  void run(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype, cudaStream_t stream);

 private:
  LtGemm& lt_;
  std::mutex mutex_;  // guards the scratch buffers
  DeviceBuffer a_codes_, w_codes_, a_scales_, w_scales_, c_staging_;
};

}  // namespace fp8rl::cuda
