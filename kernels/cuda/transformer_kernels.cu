// The elementwise, row and layout transformer operations on the GPU, forward
// and backward. The arithmetic of an element or a row is kernels/common's, the
// same functions the CPU backend calls; only the parallel decomposition lives
// here. Where the CPU fixes a summation order, a kernel reproduces it exactly:
//   - RMSNorm dots: lane_dot.h's 16 lanes, lane j summing i = j, j + 16, ...
//     in ascending i from +0, then reduce_dot_lanes. A warp handles a row;
//     its lanes j and j + 16 both compute lane j's partial (the same loads,
//     merged by the coalescer) so that no lane idles on a divergent branch.
//   - dweight, dtable: each element is owned by one thread that adds its
//     rows / tokens in ascending order, starting from the element's value,
//     without atomics.
#include <algorithm>

#include "../common/activation_backward_math.h"
#include "../common/activation_math.h"
#include "../common/bf16_codec.h"
#include "../common/lane_dot.h"
#include "../common/norm_backward_math.h"
#include "../common/norm_math.h"
#include "../common/quant_layout.h"  // ceil_div
#include "../common/rope_backward_math.h"
#include "../common/rope_math.h"
#include "cuda_check.h"
#include "transformer_kernels.h"

namespace fp8rl::cuda {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr int kThreads = 256;  // CTA size of the elementwise and row kernels
constexpr int kRowsPerCta = kThreads / kWarp;

// Upper bound on CTAs per launch; every kernel loops over the rest.
constexpr int64_t kMaxGrid = 1 << 16;

// What a kernel writes where an index it was given points outside its table
// (callers validate ids and positions; this keeps a bad one from reading
// another buffer and makes it visible).
constexpr uint32_t kQuietNanBits = 0x7FC00000u;

unsigned grid_size(int64_t ctas) { return static_cast<unsigned>(std::clamp<int64_t>(ctas, 1, kMaxGrid)); }

__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---------------------------------------------------------------------------
// Elementwise operations: one thread per element, grid-stride. Each op is a
// functor (no extended lambdas in this build) calling kernels/common.

template <class Op>
__global__ void elementwise_kernel(int64_t count, Op op) {
  for (int64_t i = global_thread(); i < count; i += grid_threads()) op(i);
}

template <class Op>
void launch_elementwise(int64_t count, const Op& op, cudaStream_t stream, const char* what) {
  if (count <= 0) return;
  elementwise_kernel<<<grid_size(ceil_div(count, kThreads)), kThreads, 0, stream>>>(count, op);
  check_launch(what);
}

struct EmbeddingOp {
  const uint16_t* table;
  int64_t vocab, hidden;
  const int32_t* ids;
  float* out;
  __device__ void operator()(int64_t e) const {
    const int64_t token = e / hidden, col = e % hidden;
    const int64_t id = ids[token];
    out[e] = id >= 0 && id < vocab ? bf16_decode(table[id * hidden + col]) : bits_float(kQuietNanBits);
  }
};

// One rotated pair (head[i], head[i + half]) per element e of [tokens, heads, half].
template <bool kInverse>
struct RopeOp {
  float* x;
  const int32_t* positions;
  int64_t heads, half;
  const float* cos;
  const float* sin;
  int64_t table_positions;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e % half, token_head = e / half;
    float* head = x + token_head * (2 * half);
    const int64_t position = positions[token_head / heads];
    if (position < 0 || position >= table_positions) {
      head[i] = head[i + half] = bits_float(kQuietNanBits);
      return;
    }
    const float c = cos[position * half + i], s = sin[position * half + i];
    if constexpr (kInverse)
      rope_unrotate_pair(head[i], head[i + half], c, s);
    else
      rope_rotate_pair(head[i], head[i + half], c, s);
  }
};

struct SwigluOp {
  const float* gate;
  const float* up;
  float* out;
  __device__ void operator()(int64_t i) const { out[i] = swiglu_value(gate[i], up[i]); }
};

struct AddOp {
  float* x;
  const float* y;
  __device__ void operator()(int64_t i) const { x[i] = add_rn(x[i], y[i]); }
};

struct AddBiasOp {
  float* x;
  const float* bias;
  int64_t cols;
  __device__ void operator()(int64_t e) const { x[e] = add_rn(x[e], bias[e % cols]); }
};

struct ToBf16Op {
  const float* x;
  uint16_t* out;
  __device__ void operator()(int64_t i) const { out[i] = bf16_encode(x[i]); }
};

// Copies 32-bit words, not floats, so that NaN payloads survive as memcpy keeps them.
struct GatherRowsOp {
  const uint32_t* x;
  int64_t cols;
  const int64_t* rows;
  uint32_t* out;
  __device__ void operator()(int64_t e) const {
    const int64_t row = rows[e / cols];
    out[e] = row >= 0 ? x[row * cols + e % cols] : kQuietNanBits;
  }
};

// Reads all three inputs of element i before writing either output, so the
// outputs may alias the inputs (element i touches only index i).
struct SwigluBackwardOp {
  const float* gate;
  const float* up;
  const float* dout;
  float* dgate;
  float* dup;
  __device__ void operator()(int64_t i) const {
    const SwigluGrad g = swiglu_backward_value(gate[i], up[i], dout[i]);
    dgate[i] = g.gate;
    dup[i] = g.up;
  }
};

// ---------------------------------------------------------------------------
// Row reductions in lane_dot.h's order.

// Lane j (0..15) of lane_dot's order: the sum, from +0, of term(i) for
// i = j, j + 16, j + 32, ... < n in ascending i. The loads do not depend on
// the running sum, so the unrolled loop keeps several in flight.
template <class Term>
__device__ __forceinline__ float lane_partial(int64_t n, int j, const Term& term) {
  float acc = 0.0f;
#pragma unroll 4
  for (int64_t i = j; i < n; i += kDotLanes) acc = add_rn(acc, term(i));
  return acc;
}

// Every lane of the warp gets reduce_dot_lanes() of the partials of lanes
// 0..15. Each __shfl_sync needs every lane's partial, so when it returns all
// of the warp's reads of the row are done: a row may then be overwritten in place.
__device__ __forceinline__ float warp_reduce_dot_lanes(float partial) {
  float lane[kDotLanes];
#pragma unroll
  for (int j = 0; j < kDotLanes; ++j) lane[j] = __shfl_sync(kFullMask, partial, j);
  return reduce_dot_lanes(lane);
}

// rms_inverse(lane_dot(x, x, dim), dim, eps) of one row, on every lane of the warp.
__device__ __forceinline__ float warp_rms_inverse(const float* x, int64_t dim, float eps, int lane) {
  const float ss = warp_reduce_dot_lanes(lane_partial(dim, lane % kDotLanes, [x](int64_t i) {
    const float v = x[i];
    return mul_rn(v, v);  // lane_dot(x, x)'s term
  }));
  return rms_inverse(ss, dim, eps);
}

// Row loop of the warp-per-row kernels: for (row = first_warp_row(); row < rows;
// row += warp_row_stride()) is warp-uniform, so the shuffles see all 32 lanes.
__device__ __forceinline__ int64_t first_warp_row() {
  return static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
}
__device__ __forceinline__ int64_t warp_row_stride() { return static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp); }

// rms_norm_row() of each row: x, out [rows, dim] (may alias).
__global__ void rms_norm_kernel(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (int64_t row = first_warp_row(); row < rows; row += warp_row_stride()) {
    const float* xr = x + row * dim;
    float* outr = out + row * dim;
    const float inv = warp_rms_inverse(xr, dim, eps, lane);
    for (int64_t i = lane; i < dim; i += kWarp) outr[i] = rms_norm_value(xr[i], inv, weight[i]);
  }
}

// inv[r] = rms_norm_row_inverse(x[r, :]) for each row.
__global__ void rms_inverse_kernel(const float* x, int64_t rows, int64_t dim, float eps, float* inv) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (int64_t row = first_warp_row(); row < rows; row += warp_row_stride()) {
    const float value = warp_rms_inverse(x + row * dim, dim, eps, lane);
    if (lane == 0) inv[row] = value;
  }
}

// rms_norm_backward_row() of each row: dx may alias x or dy (every read of the
// dot precedes the shuffles; element i is then read and written by one lane).
__global__ void rms_norm_dx_kernel(const float* x, const float* weight, const float* dy, const float* inv, int64_t rows,
                                   int64_t dim, float* dx) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (int64_t row = first_warp_row(); row < rows; row += warp_row_stride()) {
    const float* xr = x + row * dim;
    const float* dyr = dy + row * dim;
    float* dxr = dx + row * dim;
    const float c = warp_reduce_dot_lanes(
        lane_partial(dim, lane % kDotLanes, [=](int64_t i) { return rms_weighted_term(xr[i], weight[i], dyr[i]); }));
    const float row_inv = inv[row];
    const float coef = rms_backward_coef(row_inv, c, dim);
    for (int64_t i = lane; i < dim; i += kWarp)
      dxr[i] = rms_norm_backward_value(xr[i], weight[i], dyr[i], row_inv, coef);
  }
}

// dweight[i] += rms_norm_weight_grad(x[r, i], inv[r], dy[r, i]) for r = 0, 1, ...
// in order: one thread per column, as rms_norm_weight_columns() sums a column
// on one CPU thread. The running sum stays in a register (a float store and
// reload is exact); the terms of kChunk rows are loaded before they are
// added, to keep loads in flight along the serial chain of adds.
__global__ void rms_norm_dweight_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                        const float* __restrict__ inv, int64_t rows, int64_t dim,
                                        float* __restrict__ dweight) {
  constexpr int kChunk = 8;
  for (int64_t i = global_thread(); i < dim; i += grid_threads()) {
    float acc = dweight[i];
    int64_t r = 0;
    for (; r + kChunk <= rows; r += kChunk) {
      float terms[kChunk];
#pragma unroll
      for (int k = 0; k < kChunk; ++k)
        terms[k] = rms_norm_weight_grad(x[(r + k) * dim + i], inv[r + k], dy[(r + k) * dim + i]);
#pragma unroll
      for (int k = 0; k < kChunk; ++k) acc = add_rn(acc, terms[k]);
    }
    for (; r < rows; ++r) acc = add_rn(acc, rms_norm_weight_grad(x[r * dim + i], inv[r], dy[r * dim + i]));
    dweight[i] = acc;
  }
}

// ---------------------------------------------------------------------------
// Transposes: 32 x 32 tiles through shared memory, read along input rows and
// written along output rows, both coalesced. The +1 column of padding puts
// the column reads of 4-byte tiles on distinct banks.

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // CTA of kTile x kTileRows threads, kTile / kTileRows elements each

struct BitCopy {
  template <class T>
  __device__ T operator()(T v) const {
    return v;
  }
};

struct Bf16Encode {
  __device__ uint16_t operator()(float v) const { return bf16_encode(v); }
};

// out[c, r] = convert(x[r, c]): x [rows, cols] -> out [cols, rows].
template <class In, class Out, class Convert>
__global__ void transpose_kernel(const In* x, int64_t rows, int64_t cols, Out* out, Convert convert) {
  __shared__ Out tile[kTile][kTile + 1];  // [row in tile, column in tile]
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t col_tiles = ceil_div(cols, kTile);
  const int64_t tiles = ceil_div(rows, kTile) * col_tiles;
  for (int64_t unit = blockIdx.x; unit < tiles; unit += gridDim.x) {  // CTA-uniform: the barriers see every thread
    const int64_t row0 = (unit / col_tiles) * kTile, col0 = (unit % col_tiles) * kTile;
    for (int k = ty; k < kTile; k += kTileRows) {
      const int64_t r = row0 + k, c = col0 + tx;
      if (r < rows && c < cols) tile[k][tx] = convert(x[r * cols + c]);
    }
    __syncthreads();
    for (int k = ty; k < kTile; k += kTileRows) {
      const int64_t c = col0 + k, r = row0 + tx;  // output row c, output column r
      if (c < cols && r < rows) out[c * rows + r] = tile[tx][k];
    }
    __syncthreads();  // the tile is refilled by the next unit
  }
}

template <class In, class Out, class Convert>
void launch_transpose_tiles(const In* x, int64_t rows, int64_t cols, Out* out, Convert convert, cudaStream_t stream,
                            const char* what) {
  const int64_t tiles = ceil_div(rows, kTile) * ceil_div(cols, kTile);
  transpose_kernel<<<grid_size(tiles), dim3(kTile, kTileRows), 0, stream>>>(x, rows, cols, out, convert);
  check_launch(what);
}

// ---------------------------------------------------------------------------
// Embedding backward. Work unit: (a block of columns, a slice of the id
// range). Every thread scans all tokens in ascending order and adds those
// whose id falls in its slice into dtable[id, its column]: each element of
// dtable is owned by exactly one thread and gets its tokens in the CPU's
// order. Slicing the ids multiplies the parallelism beyond `hidden` threads at
// the cost of each thread re-reading the ids (staged in shared memory, read
// as broadcasts: the slice and token are CTA-uniform, so the branch is too).
// The running value of the current id stays in a register until another id
// of the slice comes; it is then stored and, if the id returns, reloaded by
// the same thread (program order makes that read see the store).

constexpr int kIdChunk = 1024;               // ids staged in shared memory at a time
constexpr int64_t kMaxIdSlices = 64;         // bounds the repeated scans of the ids
constexpr int64_t kTargetThreads = 1 << 17;  // about a full H100 / H200 at 1024 threads per SM

__global__ void embedding_backward_kernel(const float* dy, const int32_t* ids, int64_t count, int64_t vocab,
                                          int64_t hidden, float* dtable, int64_t slices, int64_t slice_ids) {
  __shared__ int32_t chunk[kIdChunk];
  const int64_t col_blocks = ceil_div(hidden, blockDim.x);
  for (int64_t unit = blockIdx.x; unit < col_blocks * slices; unit += gridDim.x) {  // CTA-uniform
    const int64_t lo = (unit / col_blocks) * slice_ids;
    const int64_t hi = lo + slice_ids < vocab ? lo + slice_ids : vocab;
    const int64_t col = (unit % col_blocks) * blockDim.x + threadIdx.x;
    const bool active = col < hidden;  // inactive threads still stage ids and meet the barriers
    int64_t current = -1;              // the id whose running value is in acc, or -1
    float acc = 0.0f;
    for (int64_t t0 = 0; t0 < count; t0 += kIdChunk) {
      const int n = static_cast<int>(count - t0 < kIdChunk ? count - t0 : kIdChunk);
      __syncthreads();  // every thread is done with the previous chunk
      for (int k = static_cast<int>(threadIdx.x); k < n; k += static_cast<int>(blockDim.x)) chunk[k] = ids[t0 + k];
      __syncthreads();
      if (!active) continue;
      for (int k = 0; k < n; ++k) {
        const int64_t id = chunk[k];
        if (id < lo || id >= hi) continue;  // another slice's, or outside [0, vocab): skipped
        if (id != current) {
          if (current >= 0) dtable[current * hidden + col] = acc;
          current = id;
          acc = dtable[id * hidden + col];
        }
        acc = add_rn(acc, dy[(t0 + k) * hidden + col]);
      }
    }
    if (active && current >= 0) dtable[current * hidden + col] = acc;
  }
}

}  // namespace

void launch_embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                      float* out, cudaStream_t stream) {
  launch_elementwise(count * hidden, EmbeddingOp{table, vocab, hidden, ids, out}, stream, "embedding kernel launch");
}

void launch_rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out,
                     cudaStream_t stream) {
  if (rows <= 0) return;
  rms_norm_kernel<<<grid_size(ceil_div(rows, kRowsPerCta)), kThreads, 0, stream>>>(x, weight, rows, dim, eps, out);
  check_launch("rms_norm kernel launch");
}

void launch_rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, const float* cos,
                 const float* sin, int64_t table_positions, cudaStream_t stream) {
  const int64_t half = head_dim / 2;
  launch_elementwise(tokens * heads * half, RopeOp<false>{x, positions, heads, half, cos, sin, table_positions}, stream,
                     "rope kernel launch");
}

void launch_swiglu(const float* gate, const float* up, int64_t count, float* out, cudaStream_t stream) {
  launch_elementwise(count, SwigluOp{gate, up, out}, stream, "swiglu kernel launch");
}

void launch_add(float* x, const float* y, int64_t count, cudaStream_t stream) {
  launch_elementwise(count, AddOp{x, y}, stream, "add kernel launch");
}

void launch_add_bias(float* x, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  launch_elementwise(rows * cols, AddBiasOp{x, bias, cols}, stream, "add_bias kernel launch");
}

void launch_to_bf16(const float* x, int64_t count, uint16_t* out, cudaStream_t stream) {
  launch_elementwise(count, ToBf16Op{x, out}, stream, "to_bf16 kernel launch");
}

void launch_transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out,
                      cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  switch (element_bytes) {
    case 1:
      return launch_transpose_tiles(static_cast<const uint8_t*>(x), rows, cols, static_cast<uint8_t*>(out), BitCopy{},
                                    stream, "transpose kernel launch");
    case 2:
      return launch_transpose_tiles(static_cast<const uint16_t*>(x), rows, cols, static_cast<uint16_t*>(out), BitCopy{},
                                    stream, "transpose kernel launch");
    case 4:
      return launch_transpose_tiles(static_cast<const uint32_t*>(x), rows, cols, static_cast<uint32_t*>(out), BitCopy{},
                                    stream, "transpose kernel launch");
    default:
      fail(Status::invalid_argument,
           "transpose: element_bytes must be 1, 2 or 4, got " + std::to_string(element_bytes));
  }
}

void launch_transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  launch_transpose_tiles(x, rows, cols, out, Bf16Encode{}, stream, "transpose_to_bf16 kernel launch");
}

void launch_gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out,
                        cudaStream_t stream) {
  launch_elementwise(count * cols,
                     GatherRowsOp{reinterpret_cast<const uint32_t*>(x), cols, rows, reinterpret_cast<uint32_t*>(out)},
                     stream, "gather_rows kernel launch");
}

size_t rms_norm_backward_workspace_bytes(int64_t rows) {
  return rows > 0 ? static_cast<size_t>(rows) * sizeof(float) : 0;
}

void launch_rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows, int64_t dim,
                              float eps, float* dx, float* dweight, void* workspace, cudaStream_t stream) {
  if (rows <= 0) return;
  float* inv = static_cast<float*>(workspace);  // [rows]
  const unsigned row_grid = grid_size(ceil_div(rows, kRowsPerCta));
  // Stream order gives the CPU backend's phases: every inv and all of dweight
  // are computed from x and dy before dx, which may overwrite either, is written.
  rms_inverse_kernel<<<row_grid, kThreads, 0, stream>>>(x, rows, dim, eps, inv);
  check_launch("rms_norm_backward (inverse) kernel launch");
  constexpr int kColumnThreads = 128;  // dim is often only a few thousand columns: spread them over more CTAs
  rms_norm_dweight_kernel<<<grid_size(ceil_div(dim, kColumnThreads)), kColumnThreads, 0, stream>>>(x, dy, inv, rows,
                                                                                                   dim, dweight);
  check_launch("rms_norm_backward (dweight) kernel launch");
  rms_norm_dx_kernel<<<row_grid, kThreads, 0, stream>>>(x, weight, dy, inv, rows, dim, dx);
  check_launch("rms_norm_backward (dx) kernel launch");
}

void launch_rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                          const float* cos, const float* sin, int64_t table_positions, cudaStream_t stream) {
  const int64_t half = head_dim / 2;
  launch_elementwise(tokens * heads * half, RopeOp<true>{g, positions, heads, half, cos, sin, table_positions}, stream,
                     "rope_backward kernel launch");
}

void launch_swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count, float* dgate,
                            float* dup, cudaStream_t stream) {
  launch_elementwise(count, SwigluBackwardOp{gate, up, dout, dgate, dup}, stream, "swiglu_backward kernel launch");
}

void launch_embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab, int64_t hidden,
                               float* dtable, cudaStream_t stream) {
  if (count <= 0 || hidden <= 0 || vocab <= 0) return;
  // A narrow table gets a narrow CTA rather than mostly idle threads.
  const int threads = static_cast<int>(std::clamp<int64_t>(ceil_div(hidden, kWarp) * kWarp, kWarp, kThreads));
  const int64_t col_blocks = ceil_div(hidden, threads);
  int64_t slices =
      std::clamp<int64_t>(ceil_div(kTargetThreads, col_blocks * threads), 1, std::min<int64_t>(vocab, kMaxIdSlices));
  const int64_t slice_ids = ceil_div(vocab, slices);
  slices = ceil_div(vocab, slice_ids);  // no empty slice at the end
  embedding_backward_kernel<<<grid_size(col_blocks * slices), threads, 0, stream>>>(dy, ids, count, vocab, hidden,
                                                                                    dtable, slices, slice_ids);
  check_launch("embedding_backward kernel launch");
}

}  // namespace fp8rl::cuda
