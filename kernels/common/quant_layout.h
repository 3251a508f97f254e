// Where the codes and scales of a block-quantized matrix live.
//
// Input is always a row-major matrix [rows, cols]. Three layouts:
//  - tile_1x128:             codes [rows, cols],  scales [rows, ceil(cols/128)]
//      activations and output gradients for fprop/dgrad (tiles along K).
//  - tile_1x128_transposed:  codes [cols, rows],  scales [cols, ceil(rows/128)]
//      activations and output gradients for wgrad (tiles along the tokens).
//  - block_128x128:          codes [rows, cols],  scales [ceil(rows/128), ceil(cols/128)]
//      weights.
// Edge tiles and blocks are partial; their scale comes from the elements present.
#pragma once

#include "host_device.h"

namespace fp8rl {

constexpr int64_t kQuantBlock = 128;

enum class BlockLayout : uint8_t { tile_1x128 = 0, tile_1x128_transposed = 1, block_128x128 = 2 };

FP8RL_HD int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct ScaleShape {
  int64_t rows;
  int64_t cols;
  FP8RL_HD int64_t count() const { return rows * cols; }
};

FP8RL_HD ScaleShape scale_shape(BlockLayout layout, int64_t rows, int64_t cols) {
  switch (layout) {
    case BlockLayout::tile_1x128: return ScaleShape{rows, ceil_div(cols, kQuantBlock)};
    case BlockLayout::tile_1x128_transposed: return ScaleShape{cols, ceil_div(rows, kQuantBlock)};
    case BlockLayout::block_128x128: break;
  }
  return ScaleShape{ceil_div(rows, kQuantBlock), ceil_div(cols, kQuantBlock)};
}

// Index into the scales of the block holding input element (row, col).
FP8RL_HD int64_t scale_index(BlockLayout layout, int64_t rows, int64_t cols, int64_t row, int64_t col) {
  const ScaleShape shape = scale_shape(layout, rows, cols);
  switch (layout) {
    case BlockLayout::tile_1x128: return row * shape.cols + col / kQuantBlock;
    case BlockLayout::tile_1x128_transposed: return col * shape.cols + row / kQuantBlock;
    case BlockLayout::block_128x128: break;
  }
  return (row / kQuantBlock) * shape.cols + col / kQuantBlock;
}

// Index into the codes of input element (row, col).
FP8RL_HD int64_t code_index(BlockLayout layout, int64_t rows, int64_t cols, int64_t row, int64_t col) {
  return layout == BlockLayout::tile_1x128_transposed ? col * rows + row : row * cols + col;
}

}  // namespace fp8rl
