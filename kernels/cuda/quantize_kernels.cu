#include <algorithm>

#include "../backend_checks.h"
#include "../common/bf16_codec.h"
#include "cuda_check.h"
#include "quantize_kernels.h"

namespace fp8rl::cuda {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

// Band kernels: a CTA of 32 x 8 threads covers 128 rows; each thread holds
// 16 rows of one column, so global loads are coalesced along the row.
constexpr int kBandX = 32;
constexpr int kBandY = 8;
constexpr int kRowsPerThread = static_cast<int>(kQuantBlock) / kBandY;   // 16
constexpr int kBlockColGroups = static_cast<int>(kQuantBlock) / kBandX;  // 4 column groups of a 128x128 block

// Upper bound on CTAs per launch; every kernel loops over the rest.
constexpr int64_t kMaxGrid = 1 << 16;

struct QuantArgs {
  int64_t rows;
  int64_t cols;
  Fp8Format format;
  ScaleFormat scale_format;
  bool saturate;
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(uint16_t bits) { return bf16_decode(bits); }

// 0 outside the matrix: a zero never raises a block's amax.
template <typename T>
__device__ __forceinline__ float load(const T* input, const QuantArgs& a, int64_t row, int64_t col) {
  return row < a.rows && col < a.cols ? to_float(input[row * a.cols + col]) : 0.0f;
}

// amax is a max, so any reduction order gives the CPU's bits.
__device__ __forceinline__ float warp_amax(float amax) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    amax = amax_update(amax, __shfl_xor_sync(kFullMask, amax, offset));
  return amax;
}

// tile_1x128: input [rows, cols] -> codes [rows, cols], scales
// [rows, ceil(cols/128)]. One warp per tile, 4 elements per lane.
template <typename T>
__global__ void quantize_tiles_kernel(const T* input, QuantArgs a, uint8_t* codes, float* scales) {
  constexpr int kPerLane = static_cast<int>(kQuantBlock) / kWarp;
  const int64_t tiles_per_row = ceil_div(a.cols, kQuantBlock);
  const int64_t warps_per_cta = blockDim.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (int64_t tile = blockIdx.x * warps_per_cta + threadIdx.x / kWarp; tile < a.rows * tiles_per_row;
       tile += gridDim.x * warps_per_cta) {  // warp-uniform, so the shuffles below see all 32 lanes
    const int64_t row = tile / tiles_per_row;
    const int64_t col0 = (tile % tiles_per_row) * kQuantBlock;
    float values[kPerLane];
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      values[j] = load(input, a, row, col0 + lane + j * kWarp);
      amax = amax_update(amax, values[j]);
    }
    const float scale = block_scale(warp_amax(amax), a.format, a.scale_format);
    if (lane == 0) scales[scale_index(BlockLayout::tile_1x128, a.rows, a.cols, row, col0)] = scale;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int64_t col = col0 + lane + j * kWarp;
      if (col < a.cols)
        codes[code_index(BlockLayout::tile_1x128, a.rows, a.cols, row, col)] =
            quantize_value(values[j], scale, a.format, a.saturate);
    }
  }
}

// block_128x128: input [rows, cols] -> codes [rows, cols], scales
// [ceil(rows/128), ceil(cols/128)]. One CTA per block; each thread holds
// 16 rows x 4 columns.
template <typename T>
__global__ void quantize_blocks_kernel(const T* input, QuantArgs a, uint8_t* codes, float* scales) {
  __shared__ float warp_partials[kBandY];
  __shared__ float block_scale_shared;
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  const int64_t col_blocks = ceil_div(a.cols, kQuantBlock);
  for (int64_t block = blockIdx.x; block < ceil_div(a.rows, kQuantBlock) * col_blocks; block += gridDim.x) {
    const int64_t row0 = (block / col_blocks) * kQuantBlock;
    const int64_t col0 = (block % col_blocks) * kQuantBlock;
    float values[kRowsPerThread][kBlockColGroups];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
      for (int g = 0; g < kBlockColGroups; ++g) {
        values[i][g] = load(input, a, row0 + y + i * kBandY, col0 + x + g * kBandX);
        amax = amax_update(amax, values[i][g]);
      }
    amax = warp_amax(amax);  // a warp is one value of y
    if (x == 0) warp_partials[y] = amax;
    __syncthreads();
    if (x == 0 && y == 0) {
      float total = 0.0f;
      for (int w = 0; w < kBandY; ++w) total = amax_update(total, warp_partials[w]);
      const float scale = block_scale(total, a.format, a.scale_format);
      block_scale_shared = scale;
      scales[scale_index(BlockLayout::block_128x128, a.rows, a.cols, row0, col0)] = scale;
    }
    __syncthreads();
    const float scale = block_scale_shared;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
      for (int g = 0; g < kBlockColGroups; ++g) {
        const int64_t row = row0 + y + i * kBandY, col = col0 + x + g * kBandX;
        if (row < a.rows && col < a.cols)
          codes[code_index(BlockLayout::block_128x128, a.rows, a.cols, row, col)] =
              quantize_value(values[i][g], scale, a.format, a.saturate);
      }
    __syncthreads();  // warp_partials and block_scale_shared are reused by the next block
  }
}

// tile_1x128_transposed: input [rows, cols] -> codes [cols, rows], scales
// [cols, ceil(rows/128)]. One CTA per 128-row band x 32 columns. Each column
// of the band is one tile; its codes are contiguous in the output, so they
// go through shared memory to be written coalesced along the band.
template <typename T>
__global__ void quantize_transposed_kernel(const T* input, QuantArgs a, uint8_t* codes, float* scales) {
  constexpr int kBand = static_cast<int>(kQuantBlock);
  constexpr int kPad = 4;  // row stride of 132 bytes spreads tile[x][...] over the banks
  __shared__ float partials[kBandY][kBandX];
  __shared__ float column_scales[kBandX];
  __shared__ uint8_t tile[kBandX][kBand + kPad];  // [column, row in band]
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  const int64_t col_chunks = ceil_div(a.cols, kBandX);
  for (int64_t unit = blockIdx.x; unit < ceil_div(a.rows, kQuantBlock) * col_chunks; unit += gridDim.x) {
    const int64_t row0 = (unit / col_chunks) * kQuantBlock;
    const int64_t col0 = (unit % col_chunks) * kBandX;
    const int64_t col = col0 + x;
    float values[kRowsPerThread];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      values[i] = load(input, a, row0 + y + i * kBandY, col);
      amax = amax_update(amax, values[i]);
    }
    partials[y][x] = amax;
    __syncthreads();
    if (y == 0) {
      float total = 0.0f;
      for (int w = 0; w < kBandY; ++w) total = amax_update(total, partials[w][x]);
      const float scale = block_scale(total, a.format, a.scale_format);
      column_scales[x] = scale;
      if (col < a.cols) scales[scale_index(BlockLayout::tile_1x128_transposed, a.rows, a.cols, row0, col)] = scale;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i)
      tile[x][y + i * kBandY] = quantize_value(values[i], column_scales[x], a.format, a.saturate);
    __syncthreads();
    const int thread = y * kBandX + x;
#pragma unroll
    for (int j = 0; j < kRowsPerThread; ++j) {
      const int flat = thread + j * kBandX * kBandY;  // walks [column, row in band] row by row
      const int64_t out_col = col0 + flat / kBand, out_row = row0 + flat % kBand;
      if (out_col < a.cols && out_row < a.rows)
        codes[code_index(BlockLayout::tile_1x128_transposed, a.rows, a.cols, out_row, out_col)] =
            tile[flat / kBand][flat % kBand];
    }
    __syncthreads();  // shared arrays are reused by the next unit
  }
}

// codes and scales in m.layout -> output [rows, cols]. One thread per output
// element, grid-stride.
__global__ void dequantize_kernel(Fp8Matrix m, float* output) {
  const int64_t count = m.rows * m.cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / m.cols, col = i % m.cols;
    output[i] = dequantize_value(m.codes[code_index(m.layout, m.rows, m.cols, row, col)],
                                 m.scales[scale_index(m.layout, m.rows, m.cols, row, col)], m.format);
  }
}

unsigned grid_size(int64_t work_items) { return static_cast<unsigned>(std::clamp<int64_t>(work_items, 1, kMaxGrid)); }

template <typename T>
void launch_quantize(const T* input, const QuantArgs& a, BlockLayout layout, uint8_t* codes, float* scales,
                     cudaStream_t stream) {
  const int64_t bands = ceil_div(a.rows, kQuantBlock);
  const dim3 band_threads(kBandX, kBandY);
  switch (layout) {
    case BlockLayout::tile_1x128: {
      constexpr int kThreads = 256;
      const int64_t tiles = a.rows * ceil_div(a.cols, kQuantBlock);
      quantize_tiles_kernel<<<grid_size(ceil_div(tiles, kThreads / kWarp)), kThreads, 0, stream>>>(input, a, codes,
                                                                                                   scales);
      break;
    }
    case BlockLayout::tile_1x128_transposed:
      quantize_transposed_kernel<<<grid_size(bands * ceil_div(a.cols, kBandX)), band_threads, 0, stream>>>(
          input, a, codes, scales);
      break;
    case BlockLayout::block_128x128:
      quantize_blocks_kernel<<<grid_size(bands * ceil_div(a.cols, kQuantBlock)), band_threads, 0, stream>>>(
          input, a, codes, scales);
      break;
  }
  check_launch("quantize kernel launch");
}

}  // namespace

void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec, uint8_t* codes,
              float* scales, cudaStream_t stream) {
  check_quantize_args(input, input_dtype, rows, cols, spec, codes, scales);
  const QuantArgs args{rows, cols, spec.format, spec.scale_format, spec.saturate};
  if (input_dtype == DType::bf16)
    launch_quantize(static_cast<const uint16_t*>(input), args, spec.layout, codes, scales, stream);
  else
    launch_quantize(static_cast<const float*>(input), args, spec.layout, codes, scales, stream);
}

void dequantize(const Fp8Matrix& matrix, float* output, cudaStream_t stream) {
  check_dequantize_args(matrix, output);
  constexpr int kThreads = 256;
  dequantize_kernel<<<grid_size(ceil_div(matrix.rows * matrix.cols, kThreads)), kThreads, 0, stream>>>(matrix, output);
  check_launch("dequantize kernel launch");
}

}  // namespace fp8rl::cuda
