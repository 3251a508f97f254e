#include <algorithm>

#include "../common/quant_layout.h"
#include "cuda_check.h"
#include "lt_scales.h"

namespace fp8rl::cuda {
namespace {

constexpr int64_t kMaxGrid = 1 << 16;

// Scale tensors are small (a few thousand floats per GEMM), so one thread
// per destination float is plenty. Each writes its float once, the padding's
// zero included, so the call needs no separate fill (two small launches per
// GEMM operand were 9% of FP8 decoding's device time).
__global__ void repack_scales_kernel(const float* src, ScaleRepack p, float* dst) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.dst_count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const bool rows_contiguous = p.row_stride == 1;  // else the columns are (ScaleRepack)
    const int64_t outer = i / (rows_contiguous ? p.col_stride : p.row_stride);
    const int64_t inner = i % (rows_contiguous ? p.col_stride : p.row_stride);
    const int64_t r = rows_contiguous ? inner : outer, c = rows_contiguous ? outer : inner;
    dst[i] = r < p.src_rows && c < p.src_cols ? src[r * p.src_cols + c] : 0.0f;
  }
}

}  // namespace

ScaleRepack vec128_repack(int64_t rows, int64_t padded_rows, int64_t k_blocks) {
  return ScaleRepack{rows, k_blocks, 1, padded_rows, padded_rows * k_blocks};
}

ScaleRepack blk128x128_repack(int64_t row_blocks, int64_t k_blocks) {
  const int64_t stride = ceil_div(k_blocks, 4) * 4;
  return ScaleRepack{row_blocks, k_blocks, stride, 1, row_blocks * stride};
}

void repack_scales(const float* src, const ScaleRepack& p, float* dst, cudaStream_t stream) {
  // Padding entries scale rows and K blocks that hold only zero codes; a
  // zero keeps them finite (uninitialized memory could hold NaN, and 0 * NaN
  // is NaN).
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>(ceil_div(p.dst_count, kThreads), 1, kMaxGrid));
  repack_scales_kernel<<<blocks, kThreads, 0, stream>>>(src, p, dst);
  check_launch("scale repack kernel launch");
}

}  // namespace fp8rl::cuda
