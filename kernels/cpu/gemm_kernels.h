// The per-ISA building blocks of the CPU GEMMs, as a table of plain function
// pointers. Each SIMD translation unit (compiled with its own -m flags) fills
// one table from the templates in gemm_microkernel.h; the portable driver in
// gemm_cpu.cpp picks a table at run time and never touches SIMD code itself.
//
// All tables compute the same bits (see the reduction order in
// gemm_microkernel.h), so choosing one is purely a speed decision.
#pragma once

#include <cstdint>

#include "../backend.h"
#include "cpu_backend.h"

namespace fp8rl::cpu {

// Every K dimension is zero-padded to a multiple of this many lanes.
constexpr int64_t kGemmLanes = 16;
// Depth (K) processed per pass over a panel; see multiply_rows.
constexpr int64_t kGemmDepthChunk = 1024;

struct GemmKernels {
  SimdLevel level;
  // W panels handed to multiply_block hold their row count rounded up to a
  // multiple of this, the extra rows zero.
  int64_t panel_rows_multiple;
  // A rows per micro-tile, at most.
  int64_t tile_rows;

  // Rows [row_begin, row_end) of an E4M3 matrix in tile_1x128 or
  // block_128x128 layout, dequantized (dequantize_value, bit for bit) into
  // out [row_end - row_begin, ld]. ld is a multiple of kGemmLanes >= cols;
  // columns [cols, ld) are set to zero.
  void (*decode_fp8_rows)(const Fp8Matrix& matrix, int64_t row_begin, int64_t row_end, float* out, int64_t ld);
  // The same for raw BF16 bits: matrix [rows, cols].
  void (*decode_bf16_rows)(const uint16_t* matrix, int64_t cols, int64_t row_begin, int64_t row_end, float* out,
                           int64_t ld);
  // c[i, j] (row stride ldc) = dot(a[i, :], w[j, :]) for i < m, j < n, in the
  // fixed reduction order. a [m, kp], w [n rounded up to panel_rows_multiple, kp],
  // kp a multiple of kGemmLanes; lanes is scratch of lane_scratch_floats(n)
  // floats, needed (and touched) only when kp > kGemmDepthChunk.
  void (*multiply_block)(const float* a, int64_t m, const float* w, int64_t n, int64_t kp, float* c, int64_t ldc,
                         float* lanes);
  // c[j - row_begin] = dot(a, W[j, :]) for j in [row_begin, row_end): the
  // bits of decoding those rows and calling multiply_block with m = 1, but
  // with W decoded in registers. a [kp] (kp = K rounded up to a multiple of
  // kGemmLanes); W an E4M3 matrix as for decode_fp8_rows, or raw BF16 bits
  // [rows, k].
  void (*multiply_row_fp8)(const float* a, const Fp8Matrix& w, int64_t row_begin, int64_t row_end, int64_t kp,
                           float* c);
  void (*multiply_row_bf16)(const float* a, const uint16_t* w, int64_t k, int64_t row_begin, int64_t row_end,
                            int64_t kp, float* c);

  int64_t lane_scratch_floats(int64_t n) const {
    const int64_t padded_n = (n + panel_rows_multiple - 1) / panel_rows_multiple * panel_rows_multiple;
    return tile_rows * padded_n * kGemmLanes;
  }
};

const GemmKernels& portable_gemm_kernels();
#if defined(__x86_64__)
const GemmKernels& avx2_gemm_kernels();
const GemmKernels& avx512_gemm_kernels();
#endif

// The table for `level` (which the caller has checked the CPU supports).
const GemmKernels& gemm_kernels(SimdLevel level);

}  // namespace fp8rl::cpu
