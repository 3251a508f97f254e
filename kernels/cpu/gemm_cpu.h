// The CPU GEMM driver: C[M, N] = A[M, K] . W[N, K]^T over either FP8 (E4M3,
// block-scaled) or BF16 operands, spread over a ThreadPool.
//
// Each output is computed as the contract of gemm_microkernel.h says:
// BF16 products (for FP8: of the raw codes) summed in FP32 lanes, FP8 block
// sums promoted with the two scales once per 128 of K. The tiling and the
// thread split only decide who computes an output, never how, so results are
// bitwise independent of M, of which rows share a call, of the thread count
// and of the SIMD level. NaN outputs are canonical (0x7FC00000 / 0x7FC0).
#pragma once

#include <vector>

#include "../backend.h"
#include "aligned_memory.h"
#include "gemm_kernels.h"
#include "thread_pool.h"

namespace fp8rl::cpu {

// One GEMM operand: rows of K elements, given either way.
struct GemmOperand {
  const Fp8Matrix* fp8 = nullptr;  // E4M3, tile_1x128 or block_128x128
  const uint16_t* bf16 = nullptr;  // raw BF16 bits [rows, K], row-major
};

// Scratch kept by a backend between calls (see ScratchBuffer on its bound).
struct GemmWorkspace {
  ScratchBuffer a_rows;                 // [M, Kp] packed A (+ its scales), shared by the threads
  std::vector<ScratchBuffer> a_blocks;  // per thread: [M, Kp] own copy when M is one block
  std::vector<ScratchBuffer> panels;    // per thread: [NB, Kp] packed W rows (+ their scales)
  std::vector<ScratchBuffer> c_blocks;  // per thread: [MB, NB] FP32 results before BF16 rounding
  std::vector<ScratchBuffer> lanes;     // per thread: accumulator lanes between depth chunks
};

// Operands must already be validated (shapes, layouts, pointers); c is
// row-major [m, n] of c_dtype.
void gemm_cpu(const GemmKernels& kernels, ThreadPool& pool, GemmWorkspace& workspace, const GemmOperand& a,
              const GemmOperand& w, int64_t m, int64_t n, int64_t k, void* c, DType c_dtype);

}  // namespace fp8rl::cpu
