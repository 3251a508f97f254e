// The running maximum of |x| behind Backend::row_abs_max (the activation
// statistics of core/policy/calibration.cpp): amax = std::max(amax, |x|) from
// amax = +0, so a NaN is ignored (std::max keeps its first argument when the
// comparison is false) and an infinity is kept.
//
// Why any order gives the column-order bits: every amax is +0, positive or
// +Inf, never NaN or -0 (|x| clears the sign), and on such values the maximum
// is associative and commutative with distinct values having distinct bits.
// Two partial maxima combine with abs_max_update too (|b| is b), so a warp may
// reduce a row in a tree.
#pragma once

#include <cstdint>

#include "host_device.h"

namespace fp8rl {

FP8RL_HD float abs_max_update(float amax, float x) {
  const uint32_t magnitude = float_bits(x) & 0x7FFFFFFFu;
  // Non-negative floats order like their bits; magnitudes above +Inf's are NaN.
  return magnitude > float_bits(amax) && magnitude <= 0x7F800000u ? bits_float(magnitude) : amax;
}

}  // namespace fp8rl
