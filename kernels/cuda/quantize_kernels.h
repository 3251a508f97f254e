// Block quantization and dequantization on the GPU. The per-element and
// per-block math is kernels/common's, so the results are bit-identical to the
// CPU backend's.
#pragma once

#include <cuda_runtime.h>

#include "../backend.h"

namespace fp8rl::cuda {

// input [rows, cols] of input_dtype -> codes and scales laid out as
// quant_layout.h describes for spec.layout. Enqueued on `stream`.
void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec, uint8_t* codes,
              float* scales, cudaStream_t stream);

// matrix -> output [rows, cols] f32, row-major whatever the layout. Enqueued on `stream`.
void dequantize(const Fp8Matrix& matrix, float* output, cudaStream_t stream);

}  // namespace fp8rl::cuda
