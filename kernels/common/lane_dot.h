// Sums of products in the fixed 16-lane order shared by the row functions
// (RMSNorm, attention scores), the order of the CPU GEMM microkernel:
//   lane j (0..15) starts at +0 and adds, for i = j, j + 16, j + 32, ... < n in
//   increasing i, the rounded product a[i] * b[i] (no FMA);
//   then s8[j] = lane[j] + lane[j + 8], s4[j] = s8[j] + s8[j + 4],
//        s2[j] = s4[j] + s4[j + 2], sum = s2[0] + s2[1].
// The order does not depend on the vector width, so a CPU loop over 16-float
// chunks vectorizes (one or two registers) and a CUDA kernel can give each
// lane to a thread and reduce with the same tree.
#pragma once

#include <cstdint>

#include "float_rn.h"

namespace fp8rl {

constexpr int kDotLanes = 16;

FP8RL_HD float reduce_dot_lanes(const float (&lane)[kDotLanes]) {
  float s8[8], s4[4];
  for (int j = 0; j < 8; ++j) s8[j] = add_rn(lane[j], lane[j + 8]);
  for (int j = 0; j < 4; ++j) s4[j] = add_rn(s8[j], s8[j + 4]);
  return add_rn(add_rn(s4[0], s4[2]), add_rn(s4[1], s4[3]));
}

// sum_i a[i] * b[i] over n values, in the lane order above.
FP8RL_HD float lane_dot(const float* a, const float* b, int64_t n) {
  float lane[kDotLanes] = {};
  int64_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes)
    for (int j = 0; j < kDotLanes; ++j) lane[j] = add_rn(lane[j], mul_rn(a[i + j], b[i + j]));
  for (int j = 0; i + j < n; ++j) lane[j] = add_rn(lane[j], mul_rn(a[i + j], b[i + j]));
  return reduce_dot_lanes(lane);
}

}  // namespace fp8rl
