// The per-ISA building blocks of the CPU GEMMs, as a table of plain function
// pointers. Each SIMD translation unit (compiled with its own -m flags) fills
// one table from the templates in gemm_microkernel.h; the portable driver in
// gemm_cpu.cpp picks a table at run time and never touches SIMD code itself.
//
// All tables compute the same bits (the contract in gemm_microkernel.h and
// docs/numerics.md), so choosing one is purely a speed decision.
//
// Operands reach the kernels "packed": rows of kp elements (K zero-padded to
// a multiple of kGemmGroup), each element the operand's BF16 value or, for
// FP8, the E4M3 code's own value (unscaled, exact in BF16), in the table's
// packed element format. FP8 scales travel beside them as [rows, K blocks].
#pragma once

#include <cstdint>

#include "../backend.h"
#include "cpu_backend.h"

namespace fp8rl::cpu {

// Accumulator lanes of one output.
constexpr int64_t kGemmLanes = 16;
// K elements per step of the lanes: two per lane (VDPBF16PS's pairs). Every
// K is zero-padded to a multiple of it.
constexpr int64_t kGemmGroup = 2 * kGemmLanes;
// Depth (K) processed per pass over a panel; a multiple of the FP8 block
// (kQuantBlock), so that a block never straddles two passes.
constexpr int64_t kGemmDepthChunk = 1024;

// What a packed FP8 operand needs besides its elements: the scale of row r's
// K block b at scales[r * blocks + b].
struct PackedScales {
  const float* scales = nullptr;
  int64_t blocks = 0;
};

struct GemmKernels {
  SimdLevel level;
  // Bytes of one packed element (2: BF16 bits; 4: FP32 value).
  int64_t packed_bytes;
  // W panels handed to multiply_block hold their row count rounded up to a
  // multiple of this, the extra rows zero (and, for FP8, their scales zero).
  int64_t panel_rows_multiple;
  // A rows per micro-tile, at most.
  int64_t tile_rows;

  // Rows [row_begin, row_end) of an E4M3 matrix (codes only: the scales are
  // packed by the driver) into out [row_end - row_begin, kp] packed elements.
  void (*pack_fp8_rows)(const Fp8Matrix& matrix, int64_t row_begin, int64_t row_end, void* out, int64_t kp);
  // The same for raw BF16 bits: matrix [rows, cols].
  void (*pack_bf16_rows)(const uint16_t* matrix, int64_t cols, int64_t row_begin, int64_t row_end, void* out,
                         int64_t kp);
  // c[i, j] (row stride ldc) = the contract's dot product of packed a[i, :]
  // and w[j, :] for i < m, j < n. a [m, kp], w [n rounded up to
  // panel_rows_multiple, kp]; a_scales/w_scales null for BF16 (and then
  // both), else the rows' block scales. lanes is scratch of
  // lane_scratch_floats(n) floats, needed (and touched) only when
  // kp > kGemmDepthChunk.
  void (*multiply_block)(const void* a, int64_t m, PackedScales a_scales, const void* w, int64_t n,
                         PackedScales w_scales, int64_t kp, float* c, int64_t ldc, float* lanes);
  // c[j - row_begin] = the contract's dot product of one packed row a [kp]
  // and W row j, for j in [row_begin, row_end): multiply_block's bits with
  // m = 1, but W read straight from the matrix and widened in registers.
  void (*multiply_row_fp8)(const void* a, PackedScales a_scales, const Fp8Matrix& w, int64_t row_begin,
                           int64_t row_end, int64_t kp, float* c);
  void (*multiply_row_bf16)(const void* a, const uint16_t* w, int64_t k, int64_t row_begin, int64_t row_end,
                            int64_t kp, float* c);

  // out [n] = the values of E4M3 codes [n] (unscaled) / of BF16 bits [n]:
  // attention's decoders for cached rows, vectorized with the table's flags.
  void (*decode_e4m3)(const uint8_t* codes, int64_t n, float* out);
  void (*decode_bf16)(const uint16_t* bits, int64_t n, float* out);

  int64_t lane_scratch_floats(int64_t n) const {
    const int64_t padded_n = (n + panel_rows_multiple - 1) / panel_rows_multiple * panel_rows_multiple;
    return tile_rows * padded_n * kGemmLanes;
  }
};

// The E4M3 codes' own values, for the kernels that widen codes (defined in a
// baseline translation unit, so that no SIMD-compiled copy of the decoder
// exists): values [256] as FP32; as BF16 bits split into bytes, for the
// byte-permute decoder, low [128] and high [128] of the positive codes.
const float* e4m3_code_values();
struct E4m3Bf16Bytes {
  uint8_t low[128];
  uint8_t high[128];
};
const E4m3Bf16Bytes& e4m3_bf16_bytes();

const GemmKernels& portable_gemm_kernels();
#if defined(__x86_64__)
const GemmKernels& avx2_gemm_kernels();
const GemmKernels& avx512_gemm_kernels();
const GemmKernels& avx512_bf16_gemm_kernels();
#endif

// The table for `level` (which the caller has checked the CPU supports).
const GemmKernels& gemm_kernels(SimdLevel level);

}  // namespace fp8rl::cpu
