#include "optimizer_cpu.h"

#include <algorithm>

#include "../common/abs_max_math.h"
#include "../common/reduction_order.h"
#include "isa_dispatch.h"

namespace fp8rl::cpu {

FP8RL_ISA_BODY void adamw_span_body(float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                                    const AdamWScalars& scalars, int64_t begin, int64_t end) {
  const AdamWScalars s = scalars;  // a local copy: the stores below cannot alias it
  for (int64_t i = begin; i < end; ++i) adamw_update_element(params[i], exp_avg[i], exp_avg_sq[i], grads[i], s);
}
void adamw_span(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, const AdamWScalars& scalars,
                int64_t begin, int64_t end) {
  isa_dispatch<adamw_span_body>(params, grads, exp_avg, exp_avg_sq, scalars, begin, end);
}

FP8RL_ISA_BODY void square_sum_chunks_body(const float* x, int64_t count, double* partials, int64_t begin,
                                           int64_t end) {
  for (int64_t c = begin; c < end; ++c) {
    const int64_t first = c * kSquareSumChunk;
    partials[c] = chunk_sum_of_squares(x + first, std::min(kSquareSumChunk, count - first));
  }
}
void square_sum_chunks(const float* x, int64_t count, double* partials, int64_t begin, int64_t end) {
  isa_dispatch<square_sum_chunks_body>(x, count, partials, begin, end);
}

int64_t first_non_finite_span(const float* x, float scale, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    if (!scaled_grad_is_finite(x[i], scale)) return i;
  return -1;
}

FP8RL_ISA_BODY void row_abs_max_rows_body(const float* x, int64_t cols, float* out, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const float* row = x + r * cols;
    float amax = 0.0f;
    for (int64_t c = 0; c < cols; ++c) amax = abs_max_update(amax, row[c]);
    out[r] = amax;
  }
}
void row_abs_max_rows(const float* x, int64_t cols, float* out, int64_t begin, int64_t end) {
  isa_dispatch<row_abs_max_rows_body>(x, cols, out, begin, end);
}

}  // namespace fp8rl::cpu
