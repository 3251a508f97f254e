// The arrays of one linear layer's compute copy (policy::LinearWeights), from
// its shape and precision alone. The forward copies, the backward pass's
// transposed copies and the memory plan all size them here, so what a plan
// counts is what the allocations hold.
#pragma once

#include <cstdint>

#include "core/model/layer_parts.h"
#include "core/policy/recipe.h"
#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {

// Element counts; zero for an array the layer does not have.
struct LinearSizes {
  int64_t bf16 = 0;    // [out, in] BF16 when not FP8
  int64_t codes = 0;   // [out, in] E4M3 when FP8
  int64_t scales = 0;  // [ceil(out / 128), ceil(in / 128)] FP32 block scales when FP8
  int64_t bias = 0;    // [out] FP32 when the layer has one

  int64_t bytes() const { return bf16 * 2 + codes + scales * 4 + bias * 4; }
};

inline LinearSizes linear_sizes(int64_t out_features, int64_t in_features, bool has_bias, bool fp8) {
  LinearSizes sizes;
  const int64_t elements = out_features * in_features;
  (fp8 ? sizes.codes : sizes.bf16) = elements;
  if (fp8) sizes.scales = scale_shape(BlockLayout::block_128x128, out_features, in_features).count();
  if (has_bias) sizes.bias = out_features;
  return sizes;
}

// Whether a projection runs in E4M3 in a layer of this precision (a part
// that is not FP8-eligible stays BF16 whatever the recipe).
inline bool runs_fp8(const model::LinearPart& part, const LayerPrecision& precision) {
  return part.fp8_eligible && precision.fp8_linear;
}

}  // namespace fp8rl::policy
