// An FP32 GEMM operand quantized to E4M3 into caller-owned scratch (grown as
// needed), as the GEMM reads it: the head's input (HeadLogits) and the
// backward's output gradients and activations (train/linear_grads) share it.
#pragma once

#include <cstdint>

#include "core/policy/device_array.h"
#include "kernels/backend.h"

namespace fp8rl::policy {

// x [rows, cols] (f32, backend memory) in `layout` into codes and scales. A
// tile_1x128_transposed operand comes back as the [cols, rows] matrix in
// 1x128 tiles that the GEMM sees.
Fp8Matrix quantize_operand(Backend& backend, const float* x, int64_t rows, int64_t cols, BlockLayout layout,
                           ScaleFormat scale_format, DeviceArray<uint8_t>& codes, DeviceArray<float>& scales);

}  // namespace fp8rl::policy
