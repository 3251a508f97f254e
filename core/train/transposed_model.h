// The transposed compute copies of a policy's weights that the backward
// pass's dgrad GEMMs read (dx = dy . W as dy . (W^T)^T): each linear layer's
// W^T [in, out] in that layer's precision (FP8: W^T's own 128x128 blocks),
// and the output head's W^T [hidden, vocab] in BF16. Built from the FP32
// master weights together with the forward copies: on every recipe change
// and after every optimizer step.
#pragma once

#include <vector>

#include "core/model/model_params.h"
#include "core/policy/compiled_model.h"
#include "core/policy/recipe.h"

namespace fp8rl::train {

struct TransposedLayer {
  policy::LinearWeights q, k, v, o;  // q: [hidden, q_dim], k/v: [hidden, kv_dim], o: [q_dim, hidden]
  policy::LinearWeights gate, up;    // [hidden, intermediate]
  policy::LinearWeights down;        // [intermediate, hidden]
};

class TransposedModel {
 public:
  TransposedModel(Backend& backend, const model::ModelParams& params, const policy::Recipe& recipe);

  const std::vector<TransposedLayer>& layers() const { return layers_; }
  const policy::LinearWeights& head() const { return head_; }  // [hidden, vocab] BF16

 private:
  std::vector<TransposedLayer> layers_;
  policy::LinearWeights head_;
};

}  // namespace fp8rl::train
