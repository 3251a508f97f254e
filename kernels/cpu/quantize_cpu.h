// Block quantization on the CPU, split into independent work units so the
// backend can spread them over threads. A unit is one row for 1x128 tiles and
// one band of 128 rows for the transposed tiles and the 128x128 blocks; units
// never share a scale, so any split gives the same bits.
#pragma once

#include "../backend.h"

namespace fp8rl::cpu {

int64_t quantize_work_units(BlockLayout layout, int64_t rows);

// Quantizes units [unit_begin, unit_end) of input [rows, cols].
void quantize_units(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                    uint8_t* codes, float* scales, int64_t unit_begin, int64_t unit_end);

// Dequantizes rows [row_begin, row_end) of the logical matrix into output [rows, cols].
void dequantize_rows(const Fp8Matrix& matrix, float* output, int64_t row_begin, int64_t row_end);

}  // namespace fp8rl::cpu
