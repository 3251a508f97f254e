// BF16 <-> FP32: round to nearest even; NaN stays NaN (quieted), Inf stays Inf.
#pragma once

#include "host_device.h"

namespace fp8rl {

FP8RL_HD uint16_t bf16_encode(float x) {
  const uint32_t bits = float_bits(x);
  if (is_nan_bits(bits)) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

FP8RL_HD float bf16_decode(uint16_t code) { return bits_float(static_cast<uint32_t>(code) << 16); }

FP8RL_HD float bf16_round(float x) { return bf16_decode(bf16_encode(x)); }

}  // namespace fp8rl
