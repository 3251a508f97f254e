#include "quantize_cpu.h"

#include <algorithm>

#include "../common/bf16_codec.h"

namespace fp8rl::cpu {
namespace {

float load_element(const void* input, DType dtype, int64_t index) {
  if (dtype == DType::bf16) return bf16_decode(static_cast<const uint16_t*>(input)[index]);
  return static_cast<const float*>(input)[index];
}

// Quantizes the rectangle [row0, row0+nrows) x [col0, col0+ncols) of input
// with one shared scale stored at scales[scale_at].
void quantize_block(const void* input, DType dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                    int64_t row0, int64_t nrows, int64_t col0, int64_t ncols, uint8_t* codes, float* scales,
                    int64_t scale_at) {
  float amax = 0.0f;
  for (int64_t r = row0; r < row0 + nrows; ++r)
    for (int64_t c = col0; c < col0 + ncols; ++c) amax = amax_update(amax, load_element(input, dtype, r * cols + c));
  const float scale = block_scale(amax, spec.format, spec.scale_format);
  scales[scale_at] = scale;
  for (int64_t r = row0; r < row0 + nrows; ++r)
    for (int64_t c = col0; c < col0 + ncols; ++c)
      codes[code_index(spec.layout, rows, cols, r, c)] =
          quantize_value(load_element(input, dtype, r * cols + c), scale, spec.format, spec.saturate);
}

}  // namespace

int64_t quantize_work_units(BlockLayout layout, int64_t rows) {
  return layout == BlockLayout::tile_1x128 ? rows : ceil_div(rows, kQuantBlock);
}

void quantize_units(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                    uint8_t* codes, float* scales, int64_t unit_begin, int64_t unit_end) {
  for (int64_t unit = unit_begin; unit < unit_end; ++unit) {
    if (spec.layout == BlockLayout::tile_1x128) {
      for (int64_t c0 = 0; c0 < cols; c0 += kQuantBlock)
        quantize_block(input, input_dtype, rows, cols, spec, unit, 1, c0, std::min(kQuantBlock, cols - c0), codes,
                       scales, scale_index(spec.layout, rows, cols, unit, c0));
      continue;
    }
    const int64_t r0 = unit * kQuantBlock;
    const int64_t band = std::min(kQuantBlock, rows - r0);
    const int64_t block_cols = spec.layout == BlockLayout::tile_1x128_transposed ? 1 : kQuantBlock;
    for (int64_t c0 = 0; c0 < cols; c0 += block_cols)
      quantize_block(input, input_dtype, rows, cols, spec, r0, band, c0, std::min(block_cols, cols - c0), codes,
                     scales, scale_index(spec.layout, rows, cols, r0, c0));
  }
}

void dequantize_rows(const Fp8Matrix& matrix, float* output, int64_t row_begin, int64_t row_end) {
  const int64_t rows = matrix.rows, cols = matrix.cols;
  for (int64_t r = row_begin; r < row_end; ++r)
    for (int64_t c = 0; c < cols; ++c)
      output[r * cols + c] = dequantize_value(matrix.codes[code_index(matrix.layout, rows, cols, r, c)],
                                              matrix.scales[scale_index(matrix.layout, rows, cols, r, c)],
                                              matrix.format);
}

}  // namespace fp8rl::cpu
