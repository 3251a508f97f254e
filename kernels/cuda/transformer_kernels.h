// The elementwise, row and layout transformer operations on the GPU, forward
// and backward (kernels/backend.h). Each element's or row's arithmetic is
// kernels/common's (norm_math.h, rope_math.h, activation_math.h, bf16_codec.h
// and their *_backward_math.h), and every sum runs in the CPU backend's order
// (lane_dot's 16-lane tree for the RMSNorm dots, ascending rows / tokens for
// the dweight / dtable accumulations, no atomics), so every result is
// bit-identical to the CPU backend's (NaN payloads aside: the GPU's arithmetic
// returns the canonical NaN).
//
// Arguments are validated by the backend (transformer_checks.h,
// transformer_backward_checks.h) before these are called; a launch with a
// row count of 0 enqueues nothing. Ids, positions and row indices live in
// device memory, so they cannot be refused here as the CPU backend refuses
// some (callers validate them, backend.h): an embedding id outside
// [0, vocab) or a rope position outside [0, table_positions) gives NaN rows,
// a negative gather row gives NaN, and embedding_backward skips tokens whose
// id is outside [0, vocab) (the CPU backend throws invalid_argument instead).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fp8rl::cuda {

// out[i, :] = bf16_decode(table[ids[i], :]). table [vocab, hidden] BF16 bits,
// ids [count], out [count, hidden]. Bit-identical (a decode is exact).
void launch_embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                      float* out, cudaStream_t stream);

// RMSNorm of each row (norm_math.h). x, out [rows, dim] (may alias), weight
// [dim]. One warp per row; the sum of squares in lane_dot's order: bit-identical.
void launch_rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out,
                     cudaStream_t stream);

// Rotary embedding in place (rope_math.h). x [tokens, heads, head_dim];
// positions [tokens]; cos, sin [table_positions, head_dim / 2]. One thread per
// rotated pair: bit-identical.
void launch_rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, const float* cos,
                 const float* sin, int64_t table_positions, cudaStream_t stream);

// out[i] = swiglu_value(gate[i], up[i]) (activation_math.h), [count]. Bit-identical.
void launch_swiglu(const float* gate, const float* up, int64_t count, float* out, cudaStream_t stream);

// x[i] += y[i], [count]. Bit-identical.
void launch_add(float* x, const float* y, int64_t count, cudaStream_t stream);

// x[r, :] += bias. x [rows, cols], bias [cols]. Bit-identical.
void launch_add_bias(float* x, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);

// out[i] = bf16_encode(x[i]), [count]. Bit-identical.
void launch_to_bf16(const float* x, int64_t count, uint16_t* out, cudaStream_t stream);

// out[c, r] = x[r, c] bit for bit, elements of element_bytes (1, 2 or 4)
// bytes. x [rows, cols] -> out [cols, rows]; must not overlap. 32x32 tiles
// through shared memory.
void launch_transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out, cudaStream_t stream);

// out[c, r] = bf16_encode(x[r, c]). x [rows, cols] -> out [cols, rows].
// Bit-identical.
void launch_transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out, cudaStream_t stream);

// out[i, :] = x[rows[i], :] bit for bit. x [*, cols], rows [count], out [count, cols].
void launch_gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out,
                        cudaStream_t stream);

// Bytes of workspace launch_rms_norm_backward needs: one float per row (the
// rows' inverse RMS). 0 when rows is 0.
size_t rms_norm_backward_workspace_bytes(int64_t rows);

// RMSNorm backward (norm_backward_math.h). x, dy, dx [rows, dim] (dx may alias
// x or dy); weight, dweight [dim]; dweight must not overlap the others.
// dweight[i] += each row's term in ascending row order, one thread per column,
// so it and dx are bit-identical. workspace: rms_norm_backward_workspace_bytes.
void launch_rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows, int64_t dim,
                              float eps, float* dx, float* dweight, void* workspace, cudaStream_t stream);

// The inverse rotation of launch_rope, in place (rope_backward_math.h). g
// [tokens, heads, head_dim]; same tables. Bit-identical.
void launch_rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                          const float* cos, const float* sin, int64_t table_positions, cudaStream_t stream);

// dgate[i], dup[i] = swiglu_backward_value(gate[i], up[i], dout[i])
// (activation_backward_math.h), [count]; outputs may alias inputs. Bit-identical.
void launch_swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count, float* dgate,
                            float* dup, cudaStream_t stream);

// dtable[ids[i], :] += dy[i, :] for i = 0, 1, ... in order. dy [count, hidden];
// ids [count]; dtable [vocab, hidden], not overlapping dy. Each element adds
// its tokens in ascending order on one thread (threads split the columns and
// the id range), without atomics: bit-identical.
void launch_embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab, int64_t hidden,
                               float* dtable, cudaStream_t stream);

}  // namespace fp8rl::cuda
