#include "core/policy/quantized_operand.h"

#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {

Fp8Matrix quantize_operand(Backend& backend, const float* x, int64_t rows, int64_t cols, BlockLayout layout,
                           ScaleFormat scale_format, DeviceArray<uint8_t>& codes, DeviceArray<float>& scales) {
  QuantSpec spec;
  spec.layout = layout;
  spec.scale_format = scale_format;
  const ScaleShape shape = scale_shape(layout, rows, cols);
  codes.reserve_discarding(backend, static_cast<size_t>(rows * cols));
  scales.reserve_discarding(backend, static_cast<size_t>(shape.rows * shape.cols));
  backend.quantize(x, DType::f32, rows, cols, spec, codes.data(), scales.data());
  Fp8Matrix matrix;
  matrix.codes = codes.data();
  matrix.scales = scales.data();
  const bool transposed = layout == BlockLayout::tile_1x128_transposed;
  matrix.rows = transposed ? cols : rows;
  matrix.cols = transposed ? rows : cols;
  matrix.layout = BlockLayout::tile_1x128;
  return matrix;
}

}  // namespace fp8rl::policy
