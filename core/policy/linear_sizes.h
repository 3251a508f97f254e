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

// How a projection computes: BF16 or E4M3 as its layer's recipe says, or
// FP32 whatever the recipe (a part that is not FP8-eligible: the router).
enum class LinearMath : uint8_t { bf16, fp8, f32 };

// Element counts; zero for an array the layer does not have.
struct LinearSizes {
  int64_t bf16 = 0;    // [out, in] BF16 when BF16
  int64_t f32 = 0;     // [out, in] FP32 when FP32
  int64_t codes = 0;   // [out, in] E4M3 when FP8
  int64_t scales = 0;  // [ceil(out / 128), ceil(in / 128)] FP32 block scales when FP8
  int64_t bias = 0;    // [out] FP32 when the layer has one

  int64_t bytes() const { return bf16 * 2 + f32 * 4 + codes + scales * 4 + bias * 4; }
};

inline LinearSizes linear_sizes(int64_t out_features, int64_t in_features, bool has_bias, LinearMath math) {
  LinearSizes sizes;
  const int64_t elements = out_features * in_features;
  switch (math) {
    case LinearMath::bf16: sizes.bf16 = elements; break;
    case LinearMath::f32: sizes.f32 = elements; break;
    case LinearMath::fp8:
      sizes.codes = elements;
      sizes.scales = scale_shape(BlockLayout::block_128x128, out_features, in_features).count();
      break;
  }
  if (has_bias) sizes.bias = out_features;
  return sizes;
}

inline LinearMath linear_math(bool fp8_eligible, const LayerPrecision& precision) {
  if (!fp8_eligible) return LinearMath::f32;
  return precision.fp8_linear ? LinearMath::fp8 : LinearMath::bf16;
}

// How a table projection (or, with fp8_eligible true, an expert's) computes
// in a layer of this precision.
inline LinearMath linear_math(const model::LinearPart& part, const LayerPrecision& precision) {
  return linear_math(part.fp8_eligible, precision);
}

// How the output head [vocab, hidden] computes under a recipe.
inline LinearMath head_math(const Recipe& recipe) {
  return recipe.head == Precision::fp8 ? LinearMath::fp8 : LinearMath::bf16;
}

// Whether the head has a compute copy of its own: an untied one, or an FP8
// one (a tied model's lookups keep reading the BF16 embeddings).
inline bool head_has_own_copy(bool tie_word_embeddings, const Recipe& recipe) {
  return !tie_word_embeddings || head_math(recipe) == LinearMath::fp8;
}

// Whether a projection runs in E4M3 in a layer of this precision.
inline bool runs_fp8(const model::LinearPart& part, const LayerPrecision& precision) {
  return linear_math(part, precision) == LinearMath::fp8;
}

}  // namespace fp8rl::policy
