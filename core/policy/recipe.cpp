#include "core/policy/recipe.h"

#include <string>

#include "kernels/error.h"

namespace fp8rl::policy {
namespace {

bool valid_precision(Precision p) { return p == Precision::bf16 || p == Precision::fp8; }

const char* name(Precision p) { return p == Precision::fp8 ? "fp8" : "bf16"; }

}  // namespace

void validate_recipe(const Recipe& recipe) {
  require(valid_precision(recipe.linear), "recipe: linear precision must be BF16 or FP8");
  require(valid_precision(recipe.kv_cache), "recipe: KV-cache precision must be BF16 or FP8");
  require(valid_precision(recipe.attention), "recipe: attention precision must be BF16 or FP8");
  require(valid_precision(recipe.head), "recipe: head precision must be BF16 or FP8");
  require(recipe.scale_format == ScaleFormat::fp32 || recipe.scale_format == ScaleFormat::pow2,
          "recipe: scale format must be FP32 or power-of-2");
  require(recipe.bf16_first_layers >= 0,
          "recipe: bf16_first_layers must not be negative, got " + std::to_string(recipe.bf16_first_layers));
  require(recipe.bf16_last_layers >= 0,
          "recipe: bf16_last_layers must not be negative, got " + std::to_string(recipe.bf16_last_layers));
  require(!(recipe.attention == Precision::fp8 && recipe.kv_cache != Precision::fp8),
          "recipe: FP8 attention reads E4M3 keys and values, so it needs the FP8 KV cache");
}

LayerPrecision layer_precision(const Recipe& recipe, int64_t layer, int64_t num_layers) {
  LayerPrecision precision;
  const bool kept_bf16 = layer < recipe.bf16_first_layers || layer >= num_layers - recipe.bf16_last_layers;
  if (kept_bf16) return precision;
  precision.fp8_linear = recipe.linear == Precision::fp8;
  precision.kv_format = recipe.kv_cache == Precision::fp8 ? KvFormat::e4m3 : KvFormat::bf16;
  precision.attention = recipe.attention == Precision::fp8 ? AttentionMath::fp8 : AttentionMath::bf16;
  return precision;
}

std::string describe_recipe(const Recipe& recipe) {
  std::string text = std::string("linear ") + name(recipe.linear);
  if (recipe.linear == Precision::fp8 || recipe.head == Precision::fp8) {
    text += recipe.scale_format == ScaleFormat::pow2 ? " (power-of-2 scales)" : " (fp32 scales)";
  }
  text += std::string(", kv-cache ") + name(recipe.kv_cache) + ", attention " + name(recipe.attention);
  if (recipe.bf16_first_layers || recipe.bf16_last_layers) {
    text += ", bf16 layers: first " + std::to_string(recipe.bf16_first_layers) + ", last " +
            std::to_string(recipe.bf16_last_layers);
  }
  if (recipe.head == Precision::fp8) text += ", head fp8";
  return text;
}

bool operator==(const Recipe& a, const Recipe& b) {
  return a.linear == b.linear && a.scale_format == b.scale_format && a.kv_cache == b.kv_cache &&
         a.attention == b.attention && a.bf16_first_layers == b.bf16_first_layers &&
         a.bf16_last_layers == b.bf16_last_layers && a.head == b.head;
}

}  // namespace fp8rl::policy
