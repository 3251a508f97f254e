// The optimizer and calibration operations on the GPU. Only the parallel
// decomposition lives here; the element arithmetic and the summation order are
// kernels/common's:
//   - AdamW: one thread per element, adamw_update_element.
//   - sum of squares: one CTA of 256 threads per 4096-element chunk, thread j
//     being lane j of reduction_order.h (square_lane_partial); the lanes'
//     pairwise tree by xor butterflies; then the tree of the chunk sums as
//     trees of aligned blocks of 256, one CTA each, repeated until one value
//     is left (the +0 padding of the order makes the blocks subtrees).
//   - first non-finite: the same chunks and trees with a minimum of indices.
//   - row maxima: one warp per row, abs_max_update in a butterfly.
#include <algorithm>
#include <utility>

#include "../common/abs_max_math.h"
#include "../common/quant_layout.h"  // ceil_div
#include "../common/reduction_order.h"
#include "cuda_check.h"
#include "optimizer_kernels.h"

namespace fp8rl::cuda {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr int kThreads = kSquareSumLanes;  // one thread per lane of reduction_order.h
constexpr int kWarps = kThreads / kWarp;
static_assert(kThreads % kWarp == 0 && (kWarps & (kWarps - 1)) == 0, "the CTA tree needs a power-of-two warp count");

// Upper bounds on CTAs per launch; every kernel loops over the rest. The
// reductions stop at 2048 CTAs (about 15 per H200 SM), which keeps the
// memory system busy; the chunk order does not depend on the grid.
constexpr int64_t kMaxGrid = 1 << 16;
constexpr int64_t kMaxReductionGrid = 2048;

// "No such index": all bits set, so that an unsigned minimum ignores it and
// it reads as -1 in an int64.
constexpr unsigned long long kNoIndex = ~0ull;

unsigned grid_size(int64_t ctas, int64_t cap) { return static_cast<unsigned>(std::clamp<int64_t>(ctas, 1, cap)); }

__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---------------------------------------------------------------------------
// AdamW

__global__ void adamw_kernel(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                             AdamWScalars scalars) {
  for (int64_t i = global_thread(); i < count; i += grid_threads())
    adamw_update_element(params[i], exp_avg[i], exp_avg_sq[i], grads[i], scalars);
}

// ---------------------------------------------------------------------------
// Chunked reductions

struct AddF64 {
  __device__ double operator()(double a, double b) const { return add_rn(a, b); }
};

struct MinIndex {
  __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const { return a < b ? a : b; }
};

// The pairwise tree (reduction_order.h) of the kThreads values v of a CTA,
// thread t holding leaf t; the result is on thread 0. A butterfly over xor
// offsets 1, 2, ..., 16 leaves on every lane of a warp the subtree of its 32
// leaves: at each level lanes j and j ^ offset add the same two nodes, only in
// the other order, and IEEE addition commutes. Warp 0 then does the same with
// the kWarps warp values. Every thread of the CTA must call it (barriers).
template <class T, class Combine>
__device__ T cta_tree(T v, Combine combine) {
  __shared__ T warp_values[kWarps];
  for (int offset = 1; offset < kWarp; offset *= 2) v = combine(v, __shfl_xor_sync(kFullMask, v, offset));
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  if (lane == 0) warp_values[warp] = v;
  __syncthreads();
  if (warp == 0) {
    // Lanes kWarps and up hold copies; xor offsets below kWarps never mix them into lanes 0 .. kWarps - 1.
    v = warp_values[lane % kWarps];
    for (int offset = 1; offset < kWarps; offset *= 2) v = combine(v, __shfl_xor_sync(kFullMask, v, offset));
  }
  __syncthreads();  // warp_values is reused by the next call
  return v;
}

// Lane `lane`'s share of the sum of squares of the chunk x[first, first + len).
struct SquareLeaf {
  const float* x;
  __device__ double operator()(int64_t first, int64_t len, int lane) const {
    return square_lane_partial(x + first, len, lane);
  }
};

// The first index of lane `lane`'s elements of the chunk whose scaled value is
// not finite (the lane's elements ascend, so its first hit is its minimum).
struct NonFiniteLeaf {
  const float* x;
  float scale;
  __device__ unsigned long long operator()(int64_t first, int64_t len, int lane) const {
    for (int64_t i = lane; i < len; i += kThreads)
      if (!scaled_grad_is_finite(x[first + i], scale)) return static_cast<unsigned long long>(first + i);
    return kNoIndex;
  }
};

// partials[c] = the CTA tree of leaf(chunk c, lane t) over the threads t.
template <class T, class Leaf, class Combine>
__global__ void __launch_bounds__(kThreads) chunk_kernel(int64_t count, Leaf leaf, Combine combine, T* partials) {
  const int64_t chunks = ceil_div(count, kSquareSumChunk);
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {  // CTA-uniform: the barriers see every thread
    const int64_t first = c * kSquareSumChunk;
    const int64_t len = count - first < kSquareSumChunk ? count - first : kSquareSumChunk;
    const T v = cta_tree(leaf(first, len, static_cast<int>(threadIdx.x)), combine);
    if (threadIdx.x == 0) partials[c] = v;
  }
}

// out[b] = the CTA tree of in[b * kThreads, (b + 1) * kThreads), padded with identity past m.
template <class T, class Combine>
__global__ void __launch_bounds__(kThreads) tree_kernel(const T* in, int64_t m, T identity, Combine combine, T* out) {
  const int64_t blocks = ceil_div(m, kThreads);
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {  // CTA-uniform
    const int64_t i = b * kThreads + threadIdx.x;
    const T v = cta_tree(i < m ? in[i] : identity, combine);
    if (threadIdx.x == 0) out[b] = v;
  }
}

// Chunk partials, then tree passes ping-ponging between the two halves of the
// workspace (reduction_workspace_bytes): [chunks] and [ceil(chunks / kThreads)].
template <class T, class Leaf, class Combine>
const T* reduce_chunks(int64_t count, Leaf leaf, Combine combine, T identity, void* workspace, cudaStream_t stream,
                       const char* what) {
  int64_t m = ceil_div(count, kSquareSumChunk);
  T* in = static_cast<T*>(workspace);
  T* out = in + m;
  chunk_kernel<<<grid_size(m, kMaxReductionGrid), kThreads, 0, stream>>>(count, leaf, combine, in);
  check_launch(what);
  while (m > 1) {
    const int64_t blocks = ceil_div(m, kThreads);
    tree_kernel<<<grid_size(blocks, kMaxReductionGrid), kThreads, 0, stream>>>(in, m, identity, combine, out);
    check_launch(what);
    std::swap(in, out);
    m = blocks;
  }
  return in;
}

// ---------------------------------------------------------------------------
// Row maxima

__global__ void row_abs_max_kernel(const float* x, int64_t rows, int64_t cols, float* out) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int64_t first_row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / kWarp;
  for (int64_t row = first_row; row < rows; row += static_cast<int64_t>(gridDim.x) * kWarps) {  // warp-uniform
    const float* xr = x + row * cols;
    float amax = 0.0f;
    for (int64_t c = lane; c < cols; c += kWarp) amax = abs_max_update(amax, xr[c]);
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
      amax = abs_max_update(amax, __shfl_xor_sync(kFullMask, amax, offset));
    if (lane == 0) out[row] = amax;
  }
}

}  // namespace

void launch_adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                         const AdamWScalars& scalars, cudaStream_t stream) {
  if (count <= 0) return;
  adamw_kernel<<<grid_size(ceil_div(count, kThreads), kMaxGrid), kThreads, 0, stream>>>(params, grads, exp_avg,
                                                                                        exp_avg_sq, count, scalars);
  check_launch("adamw_update kernel launch");
}

size_t reduction_workspace_bytes(int64_t count) {
  const int64_t chunks = ceil_div(count, kSquareSumChunk);
  return static_cast<size_t>(chunks + ceil_div(chunks, kThreads)) * sizeof(double);
}

const double* launch_sum_of_squares(const float* x, int64_t count, void* workspace, cudaStream_t stream) {
  return reduce_chunks<double>(count, SquareLeaf{x}, AddF64{}, 0.0, workspace, stream, "sum_of_squares kernel launch");
}

const int64_t* launch_first_non_finite(const float* x, int64_t count, float scale, void* workspace,
                                       cudaStream_t stream) {
  static_assert(sizeof(unsigned long long) == sizeof(int64_t) && sizeof(double) == sizeof(int64_t),
                "the workspace holds 8-byte partials");
  const unsigned long long* index = reduce_chunks<unsigned long long>(
      count, NonFiniteLeaf{x, scale}, MinIndex{}, kNoIndex, workspace, stream, "first_non_finite kernel launch");
  return reinterpret_cast<const int64_t*>(index);
}

void launch_row_abs_max(const float* x, int64_t rows, int64_t cols, float* out, cudaStream_t stream) {
  if (rows <= 0) return;
  row_abs_max_kernel<<<grid_size(ceil_div(rows, kWarps), kMaxGrid), kThreads, 0, stream>>>(x, rows, cols, out);
  check_launch("row_abs_max kernel launch");
}

}  // namespace fp8rl::cuda
