#include "quantize_cpu.h"

#include <algorithm>
#include <vector>

#include "../common/bf16_codec.h"
#include "fp8_decode_table.h"
#include "isa_dispatch.h"

// The two loops that touch every element run in the ISA variant this CPU
// supports (isa_dispatch.h). The shared codec is branch-free, so each variant
// vectorizes; all compute the same bits because the math is integer and IEEE
// division only.

namespace fp8rl::cpu {
namespace {

FP8RL_ISA_BODY float span_amax(const float* values, int64_t count) {
  uint32_t amax_bits = 0;
  for (int64_t i = 0; i < count; ++i) amax_bits = std::max(amax_bits, finite_magnitude_bits(values[i]));
  return bits_float(amax_bits);
}

template <Fp8Format kFormat>
inline void encode_span_as(const float* values, int64_t count, float scale, bool saturate, uint8_t* codes) {
  for (int64_t i = 0; i < count; ++i) codes[i] = quantize_value(values[i], scale, kFormat, saturate);
}

FP8RL_ISA_BODY void encode_span(const float* values, int64_t count, float scale, const QuantSpec& spec,
                                uint8_t* codes) {
  if (spec.format == Fp8Format::e4m3)
    encode_span_as<Fp8Format::e4m3>(values, count, scale, spec.saturate, codes);
  else
    encode_span_as<Fp8Format::e5m2>(values, count, scale, spec.saturate, codes);
}

// One tile of codes back to floats (a contiguous run sharing one scale);
// table[code] * scale is dequantize_value, bit for bit.
void decode_span(const uint8_t* codes, int64_t count, float scale, const DecodeTable& table, float* values) {
  for (int64_t i = 0; i < count; ++i) values[i] = table.values[codes[i]] * scale;
}

// Up to 128 consecutive input elements as floats: f32 input is used in place,
// BF16 input is widened into `buffer` [128].
const float* load_span(const void* input, DType dtype, int64_t offset, int64_t count, float* buffer) {
  if (dtype == DType::f32) return static_cast<const float*>(input) + offset;
  const uint16_t* bf16 = static_cast<const uint16_t*>(input) + offset;
  for (int64_t i = 0; i < count; ++i) buffer[i] = bf16_decode(bf16[i]);
  return buffer;
}

struct Matrix {
  const void* data;
  DType dtype;
  int64_t rows;
  int64_t cols;
};

// 1x128 tiles of one row: each tile is contiguous in the input and the codes.
void quantize_row_tiles(const Matrix& x, const QuantSpec& spec, int64_t row, uint8_t* codes, float* scales) {
  float buffer[kQuantBlock];
  const int64_t tiles = ceil_div(x.cols, kQuantBlock);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t c0 = t * kQuantBlock, width = std::min(kQuantBlock, x.cols - c0);
    const float* values = load_span(x.data, x.dtype, row * x.cols + c0, width, buffer);
    const float scale = block_scale(isa_dispatch<span_amax>(values, width), spec.format, spec.scale_format);
    scales[row * tiles + t] = scale;
    isa_dispatch<encode_span>(values, width, scale, spec, codes + row * x.cols + c0);
  }
}

// 128x128 blocks of one band of rows: amax over the block, then encode row by row.
void quantize_band_blocks(const Matrix& x, const QuantSpec& spec, int64_t band, uint8_t* codes, float* scales) {
  float buffer[kQuantBlock];
  const int64_t r0 = band * kQuantBlock, height = std::min(kQuantBlock, x.rows - r0);
  const int64_t blocks = ceil_div(x.cols, kQuantBlock);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * kQuantBlock, width = std::min(kQuantBlock, x.cols - c0);
    float amax = 0.0f;
    for (int64_t r = r0; r < r0 + height; ++r)
      amax = std::max(amax, isa_dispatch<span_amax>(load_span(x.data, x.dtype, r * x.cols + c0, width, buffer), width));
    const float scale = block_scale(amax, spec.format, spec.scale_format);
    scales[band * blocks + b] = scale;
    for (int64_t r = r0; r < r0 + height; ++r)
      isa_dispatch<encode_span>(load_span(x.data, x.dtype, r * x.cols + c0, width, buffer), width, scale, spec,
                                codes + r * x.cols + c0);
  }
}

// Transposed 1x128 tiles of one band of rows: each 128x128 piece is transposed
// into `columns` [128 cols, 128 rows], so every tile becomes contiguous.
void quantize_band_transposed(const Matrix& x, const QuantSpec& spec, int64_t band, uint8_t* codes, float* scales,
                              float* columns) {
  float buffer[kQuantBlock];
  const int64_t r0 = band * kQuantBlock, height = std::min(kQuantBlock, x.rows - r0);
  const int64_t bands = ceil_div(x.rows, kQuantBlock);
  for (int64_t c0 = 0; c0 < x.cols; c0 += kQuantBlock) {
    const int64_t width = std::min(kQuantBlock, x.cols - c0);
    for (int64_t r = 0; r < height; ++r) {
      const float* row = load_span(x.data, x.dtype, (r0 + r) * x.cols + c0, width, buffer);
      for (int64_t c = 0; c < width; ++c) columns[c * kQuantBlock + r] = row[c];
    }
    for (int64_t c = 0; c < width; ++c) {
      const float* column = columns + c * kQuantBlock;
      const float scale = block_scale(isa_dispatch<span_amax>(column, height), spec.format, spec.scale_format);
      scales[(c0 + c) * bands + band] = scale;
      isa_dispatch<encode_span>(column, height, scale, spec, codes + (c0 + c) * x.rows + r0);
    }
  }
}

}  // namespace

int64_t quantize_work_units(BlockLayout layout, int64_t rows) {
  return layout == BlockLayout::tile_1x128 ? rows : ceil_div(rows, kQuantBlock);
}

void quantize_units(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                    uint8_t* codes, float* scales, int64_t unit_begin, int64_t unit_end) {
  const Matrix x{input, input_dtype, rows, cols};
  if (spec.layout == BlockLayout::tile_1x128_transposed) {
    std::vector<float> columns(kQuantBlock * kQuantBlock);  // 64 KiB: too large for every caller's stack
    for (int64_t unit = unit_begin; unit < unit_end; ++unit)
      quantize_band_transposed(x, spec, unit, codes, scales, columns.data());
    return;
  }
  for (int64_t unit = unit_begin; unit < unit_end; ++unit) {
    if (spec.layout == BlockLayout::tile_1x128)
      quantize_row_tiles(x, spec, unit, codes, scales);
    else
      quantize_band_blocks(x, spec, unit, codes, scales);
  }
}

void dequantize_rows(const Fp8Matrix& matrix, float* output, int64_t row_begin, int64_t row_end) {
  const int64_t rows = matrix.rows, cols = matrix.cols;
  if (matrix.layout == BlockLayout::tile_1x128_transposed) {  // codes are column-major: no contiguous rows
    for (int64_t r = row_begin; r < row_end; ++r)
      for (int64_t c = 0; c < cols; ++c)
        output[r * cols + c] =
            dequantize_value(matrix.codes[code_index(matrix.layout, rows, cols, r, c)],
                             matrix.scales[scale_index(matrix.layout, rows, cols, r, c)], matrix.format);
    return;
  }
  const DecodeTable table(matrix.format);
  for (int64_t r = row_begin; r < row_end; ++r)
    for (int64_t c0 = 0; c0 < cols; c0 += kQuantBlock)
      decode_span(matrix.codes + r * cols + c0, std::min(kQuantBlock, cols - c0),
                  matrix.scales[scale_index(matrix.layout, rows, cols, r, c0)], table, output + r * cols + c0);
}

}  // namespace fp8rl::cpu
