// The fixed order of Backend::sum_of_squares, so that its bits depend only on
// the values and their count: never on the thread count, the grid size or the
// device. The CPU backend follows it in scalar loops, the CUDA kernels with
// one thread per lane and warp shuffles.
//
//   term(i)    = double(x[i]) * double(x[i])   (exact: a float's 24-bit
//                significand squared fits a double's 53, and its range too)
//   chunks     : x in consecutive chunks of kSquareSumChunk = 4096 elements,
//                the last one possibly shorter
//   lanes      : in the chunk starting at c0, lane j (0 <= j < 256) starts at
//                +0 and adds term(c0 + j + 256 k) for k = 0, 1, ..., 15 in
//                increasing k, as far as the chunk goes
//   chunk sum  = pairwise_tree(lane[0], ..., lane[255])
//   result     = pairwise_tree(the chunk sums, in chunk order); +0 for no values
// pairwise_tree(v[0..m)) pads v with +0 to a power of two P and adds adjacent
// pairs level by level, v[j] = v[2j] + v[2j + 1] for j < P / 2, until one
// value is left. Every addition is a correctly rounded double addition (add_rn:
// no FMA, no reassociation).
//
// Every value of the order is +0, positive, +Inf or NaN, and v + (+0) is v for
// each of them, so padding with more zeros changes no bit: the tree of the
// chunk sums can be computed as trees of aligned power-of-two blocks (one per
// CTA) followed by the tree of the block results, repeated.
#pragma once

#include <cstdint>

#include "float_rn.h"

namespace fp8rl {

constexpr int kSquareSumLanes = 256;
constexpr int64_t kSquareSumChunk = 16 * kSquareSumLanes;

FP8RL_HD double square_term(float x) {
  const double d = x;
  return mul_rn(d, d);
}

// Lane `lane` of the chunk chunk[0, len), len <= kSquareSumChunk: one GPU thread's share.
FP8RL_HD double square_lane_partial(const float* chunk, int64_t len, int lane) {
  double acc = 0.0;
  for (int64_t i = lane; i < len; i += kSquareSumLanes) acc = add_rn(acc, square_term(chunk[i]));
  return acc;
}

// pairwise_tree of v[0, p) for p a power of two (>= 1), computed in place.
FP8RL_HD double pairwise_tree(double* v, int64_t p) {
  for (int64_t width = 1; width < p; width *= 2)
    for (int64_t j = 0; j + width < p; j += 2 * width) v[j] = add_rn(v[j], v[j + width]);
  return v[0];
}

// The chunk sum of chunk[0, len), len <= kSquareSumChunk. The lanes advance
// together, 256 consecutive terms at a time (each lane still adds its terms in
// increasing k), so the host loop vectorizes.
FP8RL_HD double chunk_sum_of_squares(const float* chunk, int64_t len) {
  double lane[kSquareSumLanes] = {};
  for (int64_t row = 0; row < len; row += kSquareSumLanes) {
    const int64_t width = len - row < kSquareSumLanes ? len - row : kSquareSumLanes;
    for (int64_t j = 0; j < width; ++j) lane[j] = add_rn(lane[j], square_term(chunk[row + j]));
  }
  return pairwise_tree(lane, kSquareSumLanes);
}

}  // namespace fp8rl
