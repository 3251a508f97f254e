// The backward GEMMs of one linear layer y[M, N] = x[M, K] . W[N, K]^T in
// training, on a backend, in the layer's precision (the forward is
// ModelRunner's linear()):
//   dgrad  dx[M, K] = dy[M, N] . W        as dy . (W^T)^T with W^T [K, N] kept
//                                         beside W (FP8: its own 128x128 blocks,
//                                         which are W's blocks transposed)
//   wgrad  dW[N, K] = dy^T . x            as (dy^T) . (x^T)^T: both operands
//                                         run over the tokens, so FP8 quantizes
//                                         dy and x in 1x128 tiles along the
//                                         tokens (tile_1x128_transposed)
// Activations and output gradients are quantized per call with the recipe's
// scale format; FP32 accumulation and FP32 results.
#pragma once

#include <cstdint>

#include "core/model/model_params.h"
#include "core/policy/compiled_model.h"
#include "core/policy/device_array.h"

namespace fp8rl::train {

// Scratch for the quantized or rounded operands, grown as needed.
struct LinearGradScratch {
  DeviceArray<uint8_t> a_codes, b_codes;
  DeviceArray<float> a_scales, b_scales;
  DeviceArray<uint16_t> a_bf16, b_bf16;
};

// dx [m, in] = dy [m, out] . W, with transposed = W^T (transposed_model.h).
void linear_dgrad(Backend& backend, const policy::LinearWeights& transposed, ScaleFormat scale_format, const float* dy,
                  int64_t m, float* dx, LinearGradScratch& scratch);

// dw [out, in] = dy^T [out, m] . x [m, in]: the layer's weight gradient
// (written, not accumulated).
void linear_wgrad(Backend& backend, bool fp8, ScaleFormat scale_format, const float* dy, const float* x, int64_t m,
                  int64_t out_features, int64_t in_features, float* dw, LinearGradScratch& scratch);

}  // namespace fp8rl::train
