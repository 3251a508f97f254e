// Argument checks every backend runs before an operation, so that the CPU and
// CUDA backends refuse exactly the same calls with the same messages.
#pragma once

#include <algorithm>
#include <string>

#include "backend.h"

namespace fp8rl {

// Element counts beyond this are refused: they cannot be allocated anyway,
// and keeping them small keeps every index product far from overflow.
constexpr int64_t kMaxElements = int64_t{1} << 48;

inline bool is_float_dtype(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16; }
inline bool is_known(Fp8Format format) { return format == Fp8Format::e4m3 || format == Fp8Format::e5m2; }
inline bool is_known(ScaleFormat format) { return format == ScaleFormat::fp32 || format == ScaleFormat::pow2; }
inline bool is_known(BlockLayout layout) {
  return layout == BlockLayout::tile_1x128 || layout == BlockLayout::tile_1x128_transposed ||
         layout == BlockLayout::block_128x128;
}

inline void require_elements(int64_t rows, int64_t cols, const char* what) {
  require(rows <= kMaxElements / std::max<int64_t>(cols, 1), std::string(what) + ": matrix too large");
}

inline void check_quantize_args(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                                const uint8_t* codes, const float* scales) {
  require(input && codes && scales, "quantize: null pointer");
  require(rows > 0 && cols > 0, "quantize: rows and cols must be positive");
  require_elements(rows, cols, "quantize");
  require(is_float_dtype(input_dtype), "quantize: input dtype must be f32 or bf16");
  require(is_known(spec.format), "quantize: unknown FP8 format");
  require(is_known(spec.layout), "quantize: unknown block layout");
  require(is_known(spec.scale_format), "quantize: unknown scale format");
}

inline void check_dequantize_args(const Fp8Matrix& matrix, const float* output) {
  require(matrix.codes && matrix.scales, "dequantize: null codes or scales");
  require(output != nullptr, "dequantize: null output");
  require(matrix.rows > 0 && matrix.cols > 0, "dequantize: rows and cols must be positive");
  require_elements(matrix.rows, matrix.cols, "dequantize");
  require(is_known(matrix.format), "dequantize: unknown FP8 format");
  require(is_known(matrix.layout), "dequantize: unknown block layout");
}

// Returns false when C is empty (M or N is 0) and there is nothing to do.
inline bool check_gemm_fp8_args(const Fp8Matrix& a, const Fp8Matrix& w, const void* c, DType c_dtype) {
  require(a.codes && a.scales && w.codes && w.scales, "gemm_fp8: null operand");
  require(a.cols == w.cols, "gemm_fp8: A is [" + std::to_string(a.rows) + ", " + std::to_string(a.cols) +
                                "] but W is [" + std::to_string(w.rows) + ", " + std::to_string(w.cols) +
                                "]: the K dimensions differ");
  require(a.rows >= 0 && w.rows >= 0 && a.cols > 0, "gemm_fp8: M and N must be non-negative and K positive");
  require(a.layout == BlockLayout::tile_1x128, "gemm_fp8: A must be quantized in 1x128 tiles");
  require(w.layout == BlockLayout::block_128x128 || w.layout == BlockLayout::tile_1x128,
          "gemm_fp8: W must be quantized in 128x128 blocks or 1x128 tiles");
  require(a.format == Fp8Format::e4m3 && w.format == Fp8Format::e4m3, "gemm_fp8: operands must be E4M3");
  require_elements(a.rows, a.cols, "gemm_fp8 (A)");
  require_elements(w.rows, w.cols, "gemm_fp8 (W)");
  require_elements(a.rows, w.rows, "gemm_fp8 (C)");
  require(is_float_dtype(c_dtype), "gemm_fp8: output dtype must be f32 or bf16");
  if (a.rows == 0 || w.rows == 0) return false;
  require(c != nullptr, "gemm_fp8: null output");
  return true;
}

// Returns false when C is empty (M or N is 0) and there is nothing to do.
inline bool check_gemm_bf16_args(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, const void* c,
                                 DType c_dtype) {
  require(a && w, "gemm_bf16: null operand");
  require(m >= 0 && n >= 0 && k > 0, "gemm_bf16: bad shape M=" + std::to_string(m) + " N=" + std::to_string(n) +
                                         " K=" + std::to_string(k) + " (M, N non-negative, K positive)");
  require_elements(m, k, "gemm_bf16 (A)");
  require_elements(n, k, "gemm_bf16 (W)");
  require_elements(m, n, "gemm_bf16 (C)");
  require(is_float_dtype(c_dtype), "gemm_bf16: output dtype must be f32 or bf16");
  if (m == 0 || n == 0) return false;
  require(c != nullptr, "gemm_bf16: null output");
  return true;
}

}  // namespace fp8rl
