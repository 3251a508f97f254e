// Random BF16 inputs made on the GPU: host-side generation and upload would
// take longer than the benchmark for the largest shapes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fp8rl::bench {

// out[i] = a value uniform in [-1, 1), rounded to BF16, from a hash of (seed, i).
void fill_random_bf16(uint16_t* out, int64_t count, uint32_t seed, cudaStream_t stream);

}  // namespace fp8rl::bench
