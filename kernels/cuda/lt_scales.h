// Scale tensors rearranged into the layouts cuBLASLt's block-scaled FP8
// matmul reads on sm_90 (cuBLAS docs, section "128-element 1D and 128x128 2D
// block scaling for FP8 data types", "Scaling factors layouts"):
//  - VEC128_32F:      [L, rows] with the operand's outer dimension (M or N)
//                     contiguous, L = ceil(K/128); rows a multiple of 4.
//  - BLK128x128_32F:  [ceil(rows/128), L4] with K contiguous and the column
//                     stride L4 = L rounded up to a multiple of 4.
// Both start 16-byte aligned. Our canonical scales (quant_layout.h) are
// row-major [rows, L] and [ceil(rows/128), L], so VEC128 needs a transpose
// and BLK128x128 a padded stride.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fp8rl::cuda {

// dst[r * row_stride + c * col_stride] = src[r * src_cols + c] for src
// [src_rows, src_cols]; every other float of dst[0, dst_count) is 0. One of
// the strides is 1 (the other, at least 4, spans the contiguous dimension).
struct ScaleRepack {
  int64_t src_rows;
  int64_t src_cols;
  int64_t row_stride;
  int64_t col_stride;
  int64_t dst_count;
};

// scales [rows, L] of 1x128 tiles -> VEC128 layout [L, padded_rows].
ScaleRepack vec128_repack(int64_t rows, int64_t padded_rows, int64_t k_blocks);

// scales [row_blocks, L] of 128x128 blocks -> BLK128x128 layout [row_blocks, L4].
ScaleRepack blk128x128_repack(int64_t row_blocks, int64_t k_blocks);

// Enqueues the repack (padding zeros included) on `stream`.
void repack_scales(const float* src, const ScaleRepack& plan, float* dst, cudaStream_t stream);

}  // namespace fp8rl::cuda
