// Where a benchmark's time goes, per backend operation: ProfilingBackend
// forwards every call to the backend it wraps and adds up, per operation,
// the calls and their wall time (steady_clock), then prints them by
// operation and by category (GEMM, attention, quantization, ...: see
// op_profile.cpp), with what was spent outside the backend and an estimate
// of the CPU thread pool's dispatch overhead.
//
// Wall time per call is only meaningful on a backend whose operations finish
// before they return: the CPU backend, not the CUDA one (queued launches).
// Calls from several threads at once would need a lock; the benchmarks make
// them from one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace fp8rl::bench {

class ProfilingBackend final : public Backend {
 public:
  // threads: the wrapped CPU backend's pool size; the cost of one dispatch of
  // an empty job on a pool of that size is measured here, before any work.
  ProfilingBackend(std::unique_ptr<Backend> inner, int threads);

  // Forgets the calls counted so far (e.g. a warm-up's).
  void reset();
  // Per-operation rows sorted by time, per-category subtotals, the time
  // outside the backend (total_seconds - the operations' sum: host code) and
  // the dispatch estimate, for a region of total_seconds wall time.
  void print_table(FILE* out, const char* title, double total_seconds) const;

  BackendKind kind() const override { return inner_->kind(); }
  std::string description() const override { return inner_->description(); }

  void* allocate(size_t bytes) override;
  void deallocate(void* pointer) noexcept override;
  void upload(void* device_dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* device_src, size_t bytes) override;
  void synchronize() override;
  void copy_within(void* dst, const void* src, size_t bytes) override;
  void zero_fill(void* dst, size_t bytes) override;
  void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec, uint8_t* codes,
                float* scales) override;
  void dequantize(const Fp8Matrix& matrix, float* output) override;
  void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) override;
  void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                 DType c_dtype) override;
  void embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                 float* out) override;
  void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) override;
  void rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, const float* cos,
            const float* sin, int64_t table_positions) override;
  void swiglu(const float* gate, const float* up, int64_t count, float* out) override;
  void add(float* x, const float* y, int64_t count) override;
  void add_bias(float* x, const float* bias, int64_t rows, int64_t cols) override;
  void to_bf16(const float* x, int64_t count, uint16_t* out) override;
  void transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out) override;
  void transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) override;
  void gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out) override;
  void kv_store(const KvStoreArgs& args) override;
  void attention(const AttentionArgs& args) override;
  void moe_route(const MoeRouteArgs& args) override;
  void moe_combine(const MoeCombineArgs& args) override;
  void moe_route_backward(const MoeRouteBackwardArgs& args) override;
  void moe_combine_backward(const MoeCombineBackwardArgs& args) override;
  void sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
              float* logprobs) override;
  void token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                      const int32_t* targets, float* logprobs) override;
  void rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows, int64_t dim, float eps,
                         float* dx, float* dweight) override;
  void rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                     const float* cos, const float* sin, int64_t table_positions) override;
  void swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count, float* dgate,
                       float* dup) override;
  void embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab, int64_t hidden,
                          float* dtable) override;
  void attention_backward(const AttentionBackwardArgs& args) override;
  void log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                            const int32_t* targets, const float* coef, float* dlogits, float* entropy) override;
  void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                    const AdamWScalars& scalars) override;
  double sum_of_squares(const float* x, int64_t count) override;
  int64_t first_non_finite(const float* x, int64_t count, float scale) override;
  void row_abs_max(const float* x, int64_t rows, int64_t cols, float* out) override;

 private:
  struct Counter {
    int64_t calls = 0;
    double seconds = 0;
    int64_t dispatches = 0;  // estimated wake-ups of the CPU pool
  };
  class Timed;  // times one forwarded call into its operation's Counter

  std::unique_ptr<Backend> inner_;
  int threads_;
  double dispatch_ns_;             // median cost of one empty ThreadPool::run
  std::vector<Counter> counters_;  // [operation], in op_profile.cpp's order
};

}  // namespace fp8rl::bench
