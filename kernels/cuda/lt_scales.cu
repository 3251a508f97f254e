#include <algorithm>

#include "../common/quant_layout.h"
#include "cuda_check.h"
#include "lt_scales.h"

namespace fp8rl::cuda {
namespace {

constexpr int64_t kMaxGrid = 1 << 16;

// Scale tensors are small (a few thousand floats per GEMM), so one thread
// per scale is plenty.
__global__ void scatter_scales_kernel(const float* src, ScaleRepack p, float* dst) {
  const int64_t count = p.src_rows * p.src_cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / p.src_cols, c = i % p.src_cols;
    dst[r * p.row_stride + c * p.col_stride] = src[i];
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
  check_cuda(cudaMemsetAsync(dst, 0, static_cast<size_t>(p.dst_count) * sizeof(float), stream),
             "cudaMemsetAsync of cuBLASLt scales");
  constexpr int kThreads = 256;
  const auto blocks =
      static_cast<unsigned>(std::clamp<int64_t>(ceil_div(p.src_rows * p.src_cols, kThreads), 1, kMaxGrid));
  scatter_scales_kernel<<<blocks, kThreads, 0, stream>>>(src, p, dst);
  check_launch("scale repack kernel launch");
}

}  // namespace fp8rl::cuda
