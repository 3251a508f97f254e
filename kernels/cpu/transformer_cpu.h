// The row-wise transformer operations on the CPU (kernels/backend.h), each
// over a range of rows so the backend can spread them over threads. The
// arithmetic is kernels/common's; these loops only lay it over memory.
#pragma once

#include "../backend.h"

namespace fp8rl::cpu {

// out [count, hidden] rows [begin, end) = table[ids[i], :] decoded.
void embedding_rows(const uint16_t* table, int64_t hidden, const int32_t* ids, float* out, int64_t begin, int64_t end);
// x, out [rows, dim] rows [begin, end) (may alias).
void rms_norm_rows(const float* x, const float* weight, int64_t dim, float eps, float* out, int64_t begin, int64_t end);
// x [tokens, heads, head_dim] tokens [begin, end), in place.
void rope_tokens(float* x, const int32_t* positions, int64_t heads, int64_t head_dim, const float* cos,
                 const float* sin, int64_t begin, int64_t end);
// Elements [begin, end).
void swiglu_span(const float* gate, const float* up, float* out, int64_t begin, int64_t end);
void add_span(float* x, const float* y, int64_t begin, int64_t end);
void to_bf16_span(const float* x, uint16_t* out, int64_t begin, int64_t end);
// out [cols, rows] columns [begin, end) of x [rows, cols], transposed and rounded to BF16.
// out[c, r] = x[r, c] for input columns c in [begin, end), elements of element_bytes bytes.
void transpose_columns(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out, int64_t begin,
                       int64_t end);
void transpose_to_bf16_columns(const float* x, int64_t rows, int64_t cols, uint16_t* out, int64_t begin, int64_t end);
// x [rows, cols] rows [begin, end) += bias [cols].
void add_bias_rows(float* x, const float* bias, int64_t cols, int64_t begin, int64_t end);
// out[i, :] = x[rows[i], :] for i in [begin, end).
void gather_rows_range(const float* x, int64_t cols, const int64_t* rows, float* out, int64_t begin, int64_t end);
// Source tokens [begin, end) into the cache.
void kv_store_tokens(const KvStoreArgs& args, int64_t begin, int64_t end);

}  // namespace fp8rl::cpu
