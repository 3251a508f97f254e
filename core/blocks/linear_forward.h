// How an MLP block calls the layer's linear layers: the runner's linear
// (BF16 or E4M3 per the recipe, kernels/transformer_ops.h's row rule), so
// that blocks know nothing of activation quantization.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>

#include "core/policy/compiled_model.h"

namespace fp8rl::blocks {

// One linear layer's output: y [rows, weights.out_features].
struct LinearOutput {
  const policy::LinearWeights& weights;
  float* y;
};

// y [rows, out] = x [rows, in] . W^T (+ bias) in the layer's precision, for
// every output: linear layers that read the same x take it in one call, so
// that x is quantized (or rounded to BF16) once for all of them.
using LinearForward = std::function<void(std::initializer_list<LinearOutput> outputs, const float* x, int64_t rows)>;

}  // namespace fp8rl::blocks
