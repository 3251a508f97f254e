// Factory for the CPU backend: the reference implementation of kernels/backend.h.
#pragma once

#include <memory>

#include "../backend.h"

namespace fp8rl {

// SIMD kernel families the CPU backend chooses between at run time.
// avx512_bf16 runs VDPBF16PS (AVX512_BF16, with VBMI); the others model it.
enum class SimdLevel : uint8_t { portable = 0, avx2 = 1, avx512 = 2, avx512_bf16 = 3 };

// The best level this CPU and this build support.
SimdLevel detect_simd_level();
const char* simd_level_name(SimdLevel level);

// num_threads <= 0 means one per hardware thread. simd overrides the
// detected level (tests use it to compare kernel families); it is clamped to
// what the CPU supports.
std::unique_ptr<Backend> make_cpu_backend(int num_threads);
std::unique_ptr<Backend> make_cpu_backend(int num_threads, SimdLevel simd);

}  // namespace fp8rl
