// The interface the core talks to. The CPU backend (kernels/cpu) is the
// reference; the CUDA backend (kernels/cuda) implements the same operations and
// is tested against it. All pointers passed to an operation are memory of that
// backend (allocate/upload/download move data in and out). Operations report
// failures by throwing fp8rl::Error. On a device backend, operations are queued
// and return early; download() and synchronize() wait, and an error raised by
// a queued kernel surfaces there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/block_scale.h"
#include "common/quant_layout.h"
#include "error.h"

namespace fp8rl {

enum class DType : uint8_t { f32 = 0, bf16 = 1 };

inline size_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 2; }

struct QuantSpec {
  Fp8Format format = Fp8Format::e4m3;
  BlockLayout layout = BlockLayout::tile_1x128;
  ScaleFormat scale_format = ScaleFormat::fp32;
  bool saturate = true;
};

// A block-quantized matrix of logical shape [rows, cols], codes and scales
// laid out as quant_layout.h describes for `layout`.
struct Fp8Matrix {
  const uint8_t* codes = nullptr;
  const float* scales = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  BlockLayout layout = BlockLayout::tile_1x128;
  Fp8Format format = Fp8Format::e4m3;
};

enum class BackendKind : uint8_t { cpu = 1, cuda = 2 };

class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  // Human-readable device description, e.g. "CPU (AVX-512, 2 threads)".
  virtual std::string description() const = 0;

  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* pointer) noexcept = 0;
  virtual void upload(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void download(void* host_dst, const void* device_src, size_t bytes) = 0;
  virtual void synchronize() = 0;

  // input [rows, cols] of `input_dtype` -> codes and scales per spec.layout.
  virtual void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                        uint8_t* codes, float* scales) = 0;
  // The inverse: output [rows, cols] f32, row-major whatever the layout.
  virtual void dequantize(const Fp8Matrix& matrix, float* output) = 0;

  // C[M,N] = A[M,K] . W[N,K]^T with FP32 accumulation. A in 1x128 tiles; W in
  // 128x128 blocks or 1x128 tiles (wgrad). c is row-major [M, N] of c_dtype.
  virtual void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) = 0;
  // C[M,N] = A[M,K] . W[N,K]^T for BF16 inputs (raw uint16 bits), FP32 accumulation.
  virtual void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                         DType c_dtype) = 0;
};

}  // namespace fp8rl
