// The precision recipe: one struct that fixes the numerics of a policy for
// generation and training alike. Embedding lookups, norms, softmax and RoPE
// always run in BF16/FP32; the recipe chooses the rest.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/common/block_scale.h"
#include "kernels/transformer_ops.h"

namespace fp8rl::policy {

// Values are stable: they cross the C ABI (fp8rl_precision).
enum class Precision : int32_t { bf16 = 0, fp8 = 1 };

struct Recipe {
  // q/k/v/o and gate/up/down projections: BF16 operands, or E4M3 with
  // weights in 128x128 blocks and activations in 1x128 tiles.
  Precision linear = Precision::bf16;
  ScaleFormat scale_format = ScaleFormat::fp32;  // of the linear layers' block scales
  Precision kv_cache = Precision::bf16;          // FP8: E4M3 with a per-layer K and V scale
  Precision attention = Precision::bf16;         // FP8: Q.K^T and P.V on E4M3 inputs; needs an FP8 KV cache
  // Transformer layers at either end kept entirely in BF16 (linear, KV cache
  // and attention), as the published recipe allows for sensitive layers.
  int32_t bf16_first_layers = 0;
  int32_t bf16_last_layers = 0;
  // The output head's GEMMs (logits, and in training dgrad and wgrad): FP8
  // quantizes its weight (a tied model's shared matrix, for the head only)
  // in 128x128 blocks with scale_format. BF16 by default, as the published
  // recipe keeps it; FP8 halves the largest weight a small model's decode reads.
  Precision head = Precision::bf16;
};

// What one transformer layer actually runs.
struct LayerPrecision {
  bool fp8_linear = false;
  KvFormat kv_format = KvFormat::bf16;
  AttentionMath attention = AttentionMath::bf16;
};

// Throws invalid_argument for an enum value out of range, negative layer
// counts, or FP8 attention over a BF16 KV cache.
void validate_recipe(const Recipe& recipe);

LayerPrecision layer_precision(const Recipe& recipe, int64_t layer, int64_t num_layers);

// E.g. "linear fp8 (fp32 scales), kv-cache fp8, attention fp8, bf16 layers: first 1, last 1".
std::string describe_recipe(const Recipe& recipe);

bool operator==(const Recipe& a, const Recipe& b);

}  // namespace fp8rl::policy
