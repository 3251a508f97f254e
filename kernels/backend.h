// The interface the core talks to. The CPU backend (kernels/cpu) is the
// reference; the CUDA backend (kernels/cuda) implements the same operations and
// is tested against it. All pointers passed to an operation are memory of that
// backend (allocate/upload/download move data in and out). Operations report
// failures by throwing fp8rl::Error. On a device backend, operations are queued
// and return early; download() and synchronize() wait, and an error raised by
// a queued kernel surfaces there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/adamw_math.h"
#include "common/block_scale.h"
#include "common/quant_layout.h"
#include "error.h"
#include "moe_ops.h"
#include "transformer_backward_ops.h"
#include "transformer_ops.h"

namespace fp8rl {

enum class DType : uint8_t { f32 = 0, bf16 = 1 };

inline size_t dtype_size(DType dtype) { return dtype == DType::f32 ? 4 : 2; }

struct QuantSpec {
  Fp8Format format = Fp8Format::e4m3;
  BlockLayout layout = BlockLayout::tile_1x128;
  ScaleFormat scale_format = ScaleFormat::fp32;
  bool saturate = true;
};

// A block-quantized matrix of logical shape [rows, cols], codes and scales
// laid out as quant_layout.h describes for `layout`.
struct Fp8Matrix {
  const uint8_t* codes = nullptr;
  const float* scales = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  BlockLayout layout = BlockLayout::tile_1x128;
  Fp8Format format = Fp8Format::e4m3;
};

enum class BackendKind : uint8_t { cpu = 1, cuda = 2 };

class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendKind kind() const = 0;
  // Human-readable device description, e.g. "CPU (AVX-512, 2 threads)".
  virtual std::string description() const = 0;

  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* pointer) noexcept = 0;
  virtual void upload(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void download(void* host_dst, const void* device_src, size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Copies bytes between two buffers of this backend (they must not overlap).
  virtual void copy_within(void* dst, const void* src, size_t bytes) = 0;
  // Sets bytes of this backend's memory to zero.
  virtual void zero_fill(void* dst, size_t bytes) = 0;

  // input [rows, cols] of `input_dtype` -> codes and scales per spec.layout.
  virtual void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                        uint8_t* codes, float* scales) = 0;
  // The inverse: output [rows, cols] f32, row-major whatever the layout.
  virtual void dequantize(const Fp8Matrix& matrix, float* output) = 0;

  // C[M,N] = A[M,K] . W[N,K]^T with FP32 accumulation. A in 1x128 tiles; W in
  // 128x128 blocks or 1x128 tiles (wgrad). c is row-major [M, N] of c_dtype.
  virtual void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) = 0;
  // C[M,N] = A[M,K] . W[N,K]^T for BF16 inputs (raw uint16 bits), FP32 accumulation.
  virtual void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                         DType c_dtype) = 0;

  // Transformer operations (transformer_ops.h). Callers validate token ids,
  // positions and cache rows; the backends check only pointers and sizes.

  // out[i, :] = table[ids[i], :] decoded from BF16. table [vocab, hidden], out [count, hidden].
  virtual void embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                         float* out) = 0;
  // out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight. x, out [rows, dim] (may alias), weight [dim].
  virtual void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) = 0;
  // In-place rotary embedding, Hugging Face "rotate half" pairing (i, i + head_dim / 2).
  // x [tokens, heads, head_dim]; positions [tokens]; cos, sin [table_positions, head_dim / 2].
  virtual void rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                    const float* cos, const float* sin, int64_t table_positions) = 0;
  // out = silu(gate) * up, elementwise over count values.
  virtual void swiglu(const float* gate, const float* up, int64_t count, float* out) = 0;
  // x += y, elementwise over count values.
  virtual void add(float* x, const float* y, int64_t count) = 0;
  // x[r, :] += bias. x [rows, cols], bias [cols].
  virtual void add_bias(float* x, const float* bias, int64_t rows, int64_t cols) = 0;
  // out = BF16(x) with round-to-nearest-even, count values.
  virtual void to_bf16(const float* x, int64_t count, uint16_t* out) = 0;
  // out[c, r] = BF16(x[r, c]): x [rows, cols] -> out [cols, rows] (the
  // operands of a BF16 wgrad, whose reduction runs over the tokens).
  virtual void transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out) = 0;
  // out[c, r] = x[r, c] for elements of element_bytes (1, 2 or 4) bytes, bit
  // for bit: x [rows, cols] -> out [cols, rows] (e.g. a weight's E4M3 codes
  // or BF16 values into its transpose's). x and out must not overlap.
  virtual void transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) = 0;
  // out[i, :] = x[rows[i], :]. x [*, cols], rows [count], out [count, cols].
  virtual void gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out) = 0;
  virtual void kv_store(const KvStoreArgs& args) = 0;
  virtual void attention(const AttentionArgs& args) = 0;
  // Mixture-of-Experts routing and combine (kernels/moe_ops.h).
  virtual void moe_route(const MoeRouteArgs& args) = 0;
  virtual void moe_combine(const MoeCombineArgs& args) = 0;
  virtual void moe_route_backward(const MoeRouteBackwardArgs& args) = 0;
  virtual void moe_combine_backward(const MoeCombineBackwardArgs& args) = 0;
  // Draws one token per row of logits [rows, vocab] from the distribution
  // params[r] defines, by inverting its CDF at params[r].uniform; writes the
  // token and its log-probability under that distribution.
  virtual void sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
                      float* logprobs) = 0;
  // The log-probability of targets[r] under the distribution params[r]
  // defines over logits[r, :] (-inf outside its support); bitwise what sample()
  // reports for the same row and token.
  virtual void token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                              const int32_t* targets, float* logprobs) = 0;

  // Backward transformer operations (transformer_backward_ops.h). Each
  // recomputes what it needs of the forward with the forward's arithmetic;
  // accumulating outputs (+=) are reduced in a fixed order, whatever the
  // thread count. As for the forward, callers validate ids and positions
  // (the CPU backend checks ids and key ranges anyway).

  // RMSNorm backward, FP32 (kernels/common/norm_backward_math.h).
  // x, dy, dx [rows, dim] (dx may alias x or dy); weight [dim];
  // dweight [dim] += sum over rows r (ascending) of x[r, i] * inv_r * dy[r, i].
  virtual void rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows, int64_t dim,
                                 float eps, float* dx, float* dweight) = 0;
  // The inverse rotation of rope(), in place: g [tokens, heads, head_dim]
  // holds dLoss/d(rotated) on entry and dLoss/d(unrotated) on exit. Same tables.
  virtual void rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                             const float* cos, const float* sin, int64_t table_positions) = 0;
  // dgate = dout * up * silu'(gate), dup = dout * silu(gate), elementwise over
  // count values (kernels/common/activation_backward_math.h). Outputs may alias inputs.
  virtual void swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count, float* dgate,
                               float* dup) = 0;
  // dtable[ids[i], :] += dy[i, :] for i = 0, 1, ... in order. dy [count, hidden];
  // dtable [vocab, hidden] FP32. Ids outside [0, vocab) are refused (invalid_argument).
  virtual void embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab, int64_t hidden,
                                  float* dtable) = 0;
  // Attention backward, BF16 or FP8 math, straight-through on the quantizers
  // (transformer_backward_ops.h, kernels/common/attention_backward_math.h):
  // writes dq, accumulates dk and dv.
  virtual void attention_backward(const AttentionBackwardArgs& args) = 0;
  // For each row r: dlogits[r, :] = coef[r] * (onehot(targets[r]) - softmax(logits[r, :] / T)) / T,
  // and entropy[r] = the entropy of that softmax, computed in double
  // (kernels/common/log_softmax_backward_math.h). T = params[r].temperature
  // must be > 0; top_k and top_p are ignored (full softmax). logits, dlogits
  // [rows, vocab] (may alias); targets, coef, entropy [rows]. NaN / +Inf
  // logits are refused with Status::non_finite, as by token_logprobs().
  virtual void log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                    const int32_t* targets, const float* coef, float* dlogits, float* entropy) = 0;

  // Optimizer and calibration operations, over flat FP32 arrays (the
  // trainer's arena of master weights, gradients and moments). A count or row
  // count of 0 is a no-op whose pointers are not looked at; negative counts
  // and null pointers are refused (invalid_argument).

  // One AdamW step over count elements: adamw_update_element
  // (kernels/common/adamw_math.h) on each i, which is bitwise AdamW::step
  // (core/train/adamw.h) with the same scalars (adamw_scalars). params,
  // exp_avg, exp_avg_sq [count] are updated in place, grads [count] is read;
  // the four must not overlap. Non-finite gradients are not checked here
  // (first_non_finite does that before the step); the scalars must be finite.
  virtual void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                            const AdamWScalars& scalars) = 0;
  // The sum over i of double(x[i]) * double(x[i]), x [count], in the fixed
  // order of kernels/common/reduction_order.h: the bits depend only on x and
  // count, never on the thread count, the grid size or the device (the
  // global gradient norm is its square root). NaN when any x[i] is NaN, +Inf
  // when any is infinite. Synchronizes; returns the value (+0 for count 0).
  virtual double sum_of_squares(const float* x, int64_t count) = 0;
  // The smallest i with !isfinite(apply_grad_scale(x[i], scale)) (the product
  // x[i] * scale only when scale != 1, so a large finite value that overflows
  // is reported; scaled_grad_is_finite in adamw_math.h, AdamW::step's test),
  // or -1 when every element is finite. x [count].
  // Synchronizes; returns the index.
  virtual int64_t first_non_finite(const float* x, int64_t count, float scale) = 0;
  // out[r] = max over c of |x[r, c]|, with NaN entries ignored and +Inf kept:
  // exactly std::max(amax, std::fabs(v)) from amax = +0 in column order
  // (kernels/common/abs_max_math.h). x [rows, cols] row-major (cols > 0), out [rows].
  virtual void row_abs_max(const float* x, int64_t rows, int64_t cols, float* out) = 0;
};

}  // namespace fp8rl
