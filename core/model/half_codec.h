// IEEE 754 binary16 (FP16) <-> FP32 on the host: decode is exact, encode
// rounds to nearest even, keeps NaN a NaN (quieted) and turns values beyond
// the FP16 range (|x| >= 65520 after rounding) into infinity, as a C cast
// does. Checkpoint I/O only, so no device version.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace fp8rl::model {

inline float half_decode(uint16_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x8000u) << 16;
  const uint32_t exponent = (code >> 10) & 0x1Fu;
  uint32_t mantissa = code & 0x3FFu;
  if (exponent == 0x1Fu) return bits_float(sign | 0x7F800000u | (mantissa << 13));  // Inf, NaN
  if (exponent != 0) return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_float(sign);  // +-0
  // Subnormal: mantissa * 2^-24, normalized for FP32.
  uint32_t shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  return bits_float(sign | ((113u - shift) << 23) | ((mantissa & 0x3FFu) << 13));
}

inline uint16_t half_encode(float x) {
  const uint32_t bits = float_bits(x);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x3FFu));  // NaN
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: Inf
  const uint32_t exponent = magnitude >> 23;
  if (exponent >= 113u) {
    // Normal FP16: drop 13 mantissa bits with round to nearest even; a carry
    // into the exponent is the correct result.
    const uint32_t rebased = magnitude - (112u << 23);
    const uint32_t rounded = rebased + 0x0FFFu + ((rebased >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  if (exponent < 102u) return sign;  // below half the smallest subnormal (2^-25): rounds to 0
  // Subnormal FP16: value = m * 2^-24 with m = full mantissa >> (126 - exponent).
  const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14 .. 24
  const uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  const uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  return static_cast<uint16_t>(sign | rounded);  // 0x400 on carry is the smallest normal
}

}  // namespace fp8rl::model
