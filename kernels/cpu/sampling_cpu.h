// Sampling and token log-probabilities on the CPU, one row of logits at a
// time (kernels/common/sampling_math.h defines the distribution). Rows are
// independent, so any split over threads gives the same bits.
#pragma once

#include <vector>

#include "../backend.h"

namespace fp8rl::cpu {

// Per-thread scratch of a few vocab-sized arrays, grown to fit the largest call.
struct SamplingScratch {
  std::vector<double> scaled;   // x_i, when a filter needs them
  std::vector<double> weights;  // exp(x - m) of K, in canonical order
  std::vector<int32_t> order;   // token ids, most likely first, when a filter is active
};

// Rows [begin, end). Throws Error(non_finite) naming the row for NaN or +Inf
// logits, invalid_argument for bad parameters (or an out-of-range target).
void sample_rows(const float* logits, int64_t vocab, const SamplingRow* params, int32_t* tokens, float* logprobs,
                 int64_t begin, int64_t end, SamplingScratch& scratch);
void token_logprob_rows(const float* logits, int64_t vocab, const SamplingRow* params, const int32_t* targets,
                        float* logprobs, int64_t begin, int64_t end, SamplingScratch& scratch);

}  // namespace fp8rl::cpu
