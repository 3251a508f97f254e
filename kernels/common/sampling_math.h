// The distribution a row of logits is sampled from (transformer_ops.h
// SamplingRow), defined exactly so that sample() and token_logprobs() agree
// bit for bit, on every backend:
//
//   temperature == 0: greedy. The token is the lowest index among the maxima
//     of the logits; its log-probability is 0, every other token's -inf.
//   otherwise, in double precision, x_i = (double)logit_i / (double)temperature.
//   Candidates S: every token if top_k == 0 or top_k >= vocab; else the top_k
//     largest x, ties to the lower index (sampling_precedes()).
//   If top_p < 1: order S most likely first (sampling_precedes()), and keep
//     the shortest prefix whose cumulative exp(x - m) reaches top_p times
//     Z_S = sum over S of exp(x - m) (at least one token). Z_S sums S in its
//     canonical order (below).
//   The final set K has a canonical order: token index order when neither
//     top_k nor top_p is active, else most likely first.
//   m = max of x over K; Z = sum over K of exp(x_j - m) in canonical order;
//   log p(i) = sampling_logprob(x_i, m, log Z) for i in K, -inf otherwise.
//   sample(): target = uniform * Z; walk K in canonical order summing
//     exp(x_j - m); the token is the first at which the running sum exceeds
//     target, or the last of K if rounding leaves none.
//
// Rows are refused (Status::non_finite) when a logit is NaN or +Inf or when
// no logit is above -Inf; -Inf logits are tokens of probability 0.
#pragma once

#include <cmath>
#include <cstdint>

#include "../transformer_ops.h"
#include "host_device.h"

namespace fp8rl {

// Why a SamplingRow is invalid, or nullptr. uniform is checked only for sample().
FP8RL_HD const char* sampling_row_error(const SamplingRow& row, bool check_uniform) {
  if (!(row.temperature >= 0.0f) || row.temperature > 3.4028235e38f) return "temperature must be finite and >= 0";
  if (row.top_k < 0) return "top_k must be >= 0";
  if (!(row.top_p > 0.0f && row.top_p <= 1.0f)) return "top_p must be in (0, 1]";
  if (check_uniform && !(row.uniform >= 0.0 && row.uniform < 1.0)) return "uniform must be in [0, 1)";
  return nullptr;
}

FP8RL_HD bool sampling_is_greedy(const SamplingRow& row) { return row.temperature == 0.0f; }

// Whether the filters are active (then the canonical order is most likely first).
FP8RL_HD bool sampling_top_k_active(const SamplingRow& row, int64_t vocab) {
  return row.top_k > 0 && row.top_k < vocab;
}
FP8RL_HD bool sampling_top_p_active(const SamplingRow& row) { return row.top_p < 1.0f; }

FP8RL_HD double sampling_scaled_logit(float logit, float temperature) {
  return static_cast<double>(logit) / static_cast<double>(temperature);
}

// The most-likely-first order: larger x first, equal x by lower token index.
FP8RL_HD bool sampling_precedes(double x_a, int64_t a, double x_b, int64_t b) {
  return x_a > x_b || (x_a == x_b && a < b);
}

// The weight exp(x - m) of a token and the log of a sum of weights, in double.
// Each is the platform's libm (glibc on the CPU, CUDA's on the GPU): both are
// within 1 ulp but not correctly rounded, so a weight may differ in its last
// bit between backends; results agree bit for bit unless such a difference
// moves a float rounding or a draw boundary (rare: see kernels/cuda/sampling_kernels.h).
FP8RL_HD double sampling_weight(double x, double m) {
#if defined(__CUDA_ARCH__)
  return ::exp(x - m);
#else
  return std::exp(x - m);
#endif
}
FP8RL_HD double sampling_log(double z) {
#if defined(__CUDA_ARCH__)
  return ::log(z);
#else
  return std::log(z);
#endif
}

// Whether a most-likely-first prefix of weight `cumulative` out of Z_S = z_s reaches top_p.
FP8RL_HD bool sampling_top_p_reached(double cumulative, double z_s, float top_p) {
  return cumulative / z_s >= static_cast<double>(top_p);
}

// The running sum of K's weights at which sample() stops: the first token whose running sum exceeds this.
FP8RL_HD double sampling_draw_target(double uniform, double z) { return uniform * z; }

FP8RL_HD float sampling_logprob(double x, double m, double log_z) { return static_cast<float>((x - m) - log_z); }

}  // namespace fp8rl
