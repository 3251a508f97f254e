// How one K or V value is stored in the cache (transformer_ops.h KvFormat):
// BF16 rounds to nearest even; E4M3 is the saturating code of value / scale,
// the same division as block_scale.h's quantize_value. NaN stays NaN.
#pragma once

#include "bf16_codec.h"
#include "block_scale.h"

namespace fp8rl {

FP8RL_HD uint16_t kv_store_bf16(float value) { return bf16_encode(value); }

FP8RL_HD uint8_t kv_store_e4m3(float value, float scale) {
  return quantize_value(value, scale, Fp8Format::e4m3, /*saturate=*/true);
}

}  // namespace fp8rl
