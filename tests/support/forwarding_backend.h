// A Backend that hands every call to another one: the base for test backends
// that observe or alter a few operations (override those, inherit the rest).
// Each virtual of kernels/backend.h has exactly one forward here, so a new
// virtual there is one new line here; until it is added, every subclass
// fails to compile (abstract), rather than silently skipping the new call.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "kernels/backend.h"

namespace fp8rl::test {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  Backend& inner() { return *inner_; }

  BackendKind kind() const override { return inner_->kind(); }
  std::string description() const override { return inner_->description(); }

  void* allocate(size_t bytes) override { return inner_->allocate(bytes); }
  void deallocate(void* pointer) noexcept override { inner_->deallocate(pointer); }
  void upload(void* dst, const void* src, size_t bytes) override { inner_->upload(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { inner_->download(dst, src, bytes); }
  void synchronize() override { inner_->synchronize(); }
  void copy_within(void* dst, const void* src, size_t bytes) override { inner_->copy_within(dst, src, bytes); }
  void zero_fill(void* dst, size_t bytes) override { inner_->zero_fill(dst, bytes); }

  void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec, uint8_t* codes,
                float* scales) override {
    inner_->quantize(input, input_dtype, rows, cols, spec, codes, scales);
  }
  void dequantize(const Fp8Matrix& matrix, float* output) override { inner_->dequantize(matrix, output); }
  void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) override {
    inner_->gemm_fp8(a, w, c, c_dtype);
  }
  void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                 DType c_dtype) override {
    inner_->gemm_bf16(a, w, m, n, k, c, c_dtype);
  }

  void embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                 float* out) override {
    inner_->embedding(table, vocab, hidden, ids, count, out);
  }
  void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) override {
    inner_->rms_norm(x, weight, rows, dim, eps, out);
  }
  void rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, const float* cos,
            const float* sin, int64_t table_positions) override {
    inner_->rope(x, positions, tokens, heads, head_dim, cos, sin, table_positions);
  }
  void swiglu(const float* gate, const float* up, int64_t count, float* out) override {
    inner_->swiglu(gate, up, count, out);
  }
  void add(float* x, const float* y, int64_t count) override { inner_->add(x, y, count); }
  void add_bias(float* x, const float* bias, int64_t rows, int64_t cols) override {
    inner_->add_bias(x, bias, rows, cols);
  }
  void to_bf16(const float* x, int64_t count, uint16_t* out) override { inner_->to_bf16(x, count, out); }
  void transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out) override {
    inner_->transpose_to_bf16(x, rows, cols, out);
  }
  void transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) override {
    inner_->transpose(x, rows, cols, element_bytes, out);
  }
  void gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out) override {
    inner_->gather_rows(x, cols, rows, count, out);
  }
  void moe_route(const MoeRouteArgs& args) override { inner_->moe_route(args); }
  void moe_combine(const MoeCombineArgs& args) override { inner_->moe_combine(args); }
  void moe_route_backward(const MoeRouteBackwardArgs& args) override { inner_->moe_route_backward(args); }
  void moe_combine_backward(const MoeCombineBackwardArgs& args) override { inner_->moe_combine_backward(args); }
  void kv_store(const KvStoreArgs& args) override { inner_->kv_store(args); }
  void attention(const AttentionArgs& args) override { inner_->attention(args); }
  void sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
              float* logprobs) override {
    inner_->sample(logits, rows, vocab, params, tokens, logprobs);
  }
  void token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                      const int32_t* targets, float* logprobs) override {
    inner_->token_logprobs(logits, rows, vocab, params, targets, logprobs);
  }

  void rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows, int64_t dim, float eps,
                         float* dx, float* dweight) override {
    inner_->rms_norm_backward(x, weight, dy, rows, dim, eps, dx, dweight);
  }
  void rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                     const float* cos, const float* sin, int64_t table_positions) override {
    inner_->rope_backward(g, positions, tokens, heads, head_dim, cos, sin, table_positions);
  }
  void swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count, float* dgate,
                       float* dup) override {
    inner_->swiglu_backward(gate, up, dout, count, dgate, dup);
  }
  void embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab, int64_t hidden,
                          float* dtable) override {
    inner_->embedding_backward(dy, ids, count, vocab, hidden, dtable);
  }
  void attention_backward(const AttentionBackwardArgs& args) override { inner_->attention_backward(args); }
  void log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                            const int32_t* targets, const float* coef, float* dlogits, float* entropy) override {
    inner_->log_softmax_backward(logits, rows, vocab, params, targets, coef, dlogits, entropy);
  }
  void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                    const AdamWScalars& scalars) override {
    inner_->adamw_update(params, grads, exp_avg, exp_avg_sq, count, scalars);
  }
  double sum_of_squares(const float* x, int64_t count) override { return inner_->sum_of_squares(x, count); }
  int64_t first_non_finite(const float* x, int64_t count, float scale) override {
    return inner_->first_non_finite(x, count, scale);
  }
  void row_abs_max(const float* x, int64_t rows, int64_t cols, float* out) override {
    inner_->row_abs_max(x, rows, cols, out);
  }

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace fp8rl::test
