// The state one layer's backward works with, and the two steps every linear
// projection's backward takes, shared by layer_backward and the blocks
// (core/blocks) whose backward it dispatches to.
#pragma once

#include <cstdint>

#include "core/train/layer_backward.h"

namespace fp8rl::train {

struct LayerPass {
  Backend& backend;
  const model::ModelConfig& config;
  const policy::CompiledLayer& layer;
  const TransposedLayer& transposed;
  ScaleFormat format;
  int64_t tokens;
  const policy::PassIndices& indices;  // the recorded pass's (ForwardTape)
  const policy::RopeTable& rope;
  LayerBackwardScratch& scratch;
};

// For y = x . W^T + b over the pass's tokens: dW += dy^T . x and db += column
// sums of dy.
void weight_grads(LayerPass& p, const policy::LinearWeights& weights, const float* dy, const float* x,
                  const LinearGradPointers& grads);

// dx (+)= dy . W, with transposed = W^T; accumulate adds into dx instead of writing it.
void input_grad(LayerPass& p, const policy::LinearWeights& transposed, const float* dy, float* dx, bool accumulate);

}  // namespace fp8rl::train
