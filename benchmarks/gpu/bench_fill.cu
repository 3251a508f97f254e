#include "bench_fill.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/cuda/cuda_check.h"

namespace fp8rl::bench {
namespace {

__device__ uint32_t hash(uint64_t x) {  // splitmix64's finalizer, top 32 bits
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>((x ^ (x >> 31)) >> 32);
}

__global__ void fill_kernel(uint16_t* out, int64_t count, uint32_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float unit = static_cast<float>(hash((static_cast<uint64_t>(seed) << 40) ^ static_cast<uint64_t>(i)) >> 8) *
                       (1.0f / 16777216.0f);  // [0, 1) with 24 random bits
    out[i] = bf16_encode(2.0f * unit - 1.0f);
  }
}

}  // namespace

void fill_random_bf16(uint16_t* out, int64_t count, uint32_t seed, cudaStream_t stream) {
  constexpr int kThreads = 256, kBlocks = 4096;
  fill_kernel<<<kBlocks, kThreads, 0, stream>>>(out, count, seed);
  cuda::check_launch("fill kernel launch");
}

}  // namespace fp8rl::bench
