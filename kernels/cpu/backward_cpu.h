// The row-wise backward transformer operations on the CPU
// (kernels/backend.h), each over a range of rows, columns or elements so the
// backend can spread them over threads. The arithmetic is kernels/common's
// *_backward_math.h; these loops only lay it over memory. Accumulating
// outputs are split by column, so each element sums its rows in ascending
// order on one thread, whatever the split.
#pragma once

#include "../backend.h"

namespace fp8rl::cpu {

// inv[r] for rows [begin, end) of x [rows, dim], as the forward computes it.
void rms_inverse_rows(const float* x, int64_t dim, float eps, float* inv, int64_t begin, int64_t end);
// dx rows [begin, end) (x, dy, dx [rows, dim]; inv [rows]).
void rms_norm_backward_rows(const float* x, const float* weight, const float* dy, const float* inv, int64_t dim,
                            float* dx, int64_t begin, int64_t end);
// dweight columns [begin, end) += sum over all rows, ascending.
void rms_norm_weight_columns(const float* x, const float* dy, const float* inv, int64_t rows, int64_t dim,
                             float* dweight, int64_t begin, int64_t end);
// g [tokens, heads, head_dim] tokens [begin, end), in place.
void rope_backward_tokens(float* g, const int32_t* positions, int64_t heads, int64_t head_dim, const float* cos,
                          const float* sin, int64_t begin, int64_t end);
// Elements [begin, end).
void swiglu_backward_span(const float* gate, const float* up, const float* dout, float* dgate, float* dup,
                          int64_t begin, int64_t end);
// dtable[ids[i], c] += dy[i, c] for columns c in [begin, end), tokens i ascending.
void embedding_backward_columns(const float* dy, const int32_t* ids, int64_t count, int64_t hidden, float* dtable,
                                int64_t begin, int64_t end);
// Throws invalid_argument for an id outside [0, vocab).
void check_embedding_ids(const int32_t* ids, int64_t count, int64_t vocab);
// Rows [begin, end). Throws non_finite for NaN / +Inf / all -Inf rows,
// invalid_argument for a temperature that is not > 0 or a target out of range.
void log_softmax_backward_rows(const float* logits, int64_t vocab, const SamplingRow* params, const int32_t* targets,
                               const float* coef, float* dlogits, float* entropy, int64_t begin, int64_t end);

}  // namespace fp8rl::cpu
