// How an MLP block calls the layer's linear layers: the runner's linear
// (BF16 or E4M3 per the recipe, kernels/transformer_ops.h's row rule), so
// that blocks know nothing of activation quantization.
#pragma once

#include <cstdint>
#include <functional>

#include "core/policy/compiled_model.h"

namespace fp8rl::blocks {

// y [rows, out] = x [rows, in] . W^T (+ bias) in the layer's precision.
using LinearForward = std::function<void(const policy::LinearWeights& weights, const float* x, int64_t rows, float* y)>;

}  // namespace fp8rl::blocks
