// The transposed compute copies of a policy's weights that the backward
// pass's dgrad GEMMs read (dx = dy . W as dy . (W^T)^T): each linear layer's
// W^T [in, out] in that layer's precision, and the output head's W^T
// [hidden, vocab] in the head's. They are the forward copies transposed on the
// backend: a 128x128 block of W^T holds exactly the values of one block of W,
// so its amax, scale and E4M3 codes are that block's, transposed, bit for bit
// what quantizing W^T would give. Refreshed after the forward copies: on
// every recipe change and after every optimizer step.
#pragma once

#include <array>
#include <vector>

#include "core/policy/compiled_model.h"

namespace fp8rl::train {

// W^T [in, out] of each linear projection of a layer.
struct TransposedLayer {
  std::array<policy::LinearWeights, model::kLinearCount> linears;  // by model::Linear
  std::vector<policy::CompiledExpert> experts;                      // W^T of each expert's projections

  const policy::LinearWeights& linear(model::Linear role) const { return linears[model::index(role)]; }
};

// W^T's arrays for a layer shaped as `forward`, contents undefined.
policy::LinearWeights allocate_transposed(Backend& backend, const policy::LinearWeights& forward);
// transposed = forward^T, in place.
void transpose_linear(Backend& backend, const policy::LinearWeights& forward, policy::LinearWeights& transposed);

// What a TransposedModel of `config` under `recipe` holds, in bytes, from
// the shapes alone (memory planning); equals its bytes().
int64_t transposed_weight_bytes(const model::ModelConfig& config, const policy::Recipe& recipe);

class TransposedModel {
 public:
  explicit TransposedModel(Backend& backend, const policy::CompiledModel& model);
  // Transposes the forward copies again (same shapes and precisions).
  void refit(const policy::CompiledModel& model);

  const std::vector<TransposedLayer>& layers() const { return layers_; }
  const policy::LinearWeights& head() const { return head_; }  // [hidden, vocab] in the head's precision
  int64_t bytes() const;

 private:
  Backend& backend_;
  int64_t vocab_ = 0, hidden_ = 0;
  std::vector<TransposedLayer> layers_;
  policy::LinearWeights head_;
};

}  // namespace fp8rl::train
