// A stand-in for a device backend: computes with the CPU backend but reports
// kind() == cuda, so the core stages every host array through allocate /
// upload / download, as it does for a real GPU. Device allocations are filled
// with a poison byte and counted, so tests see stale reads and leaks. A
// pointer anywhere inside a live allocation counts as device memory (the
// transformer operations get pointers to one layer's part of a buffer).
#pragma once

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>

#include "kernels/cpu/cpu_backend.h"

namespace fp8rl::test {

class FakeDeviceBackend final : public Backend {
 public:
  FakeDeviceBackend() : cpu_(make_cpu_backend(2)) {}

  BackendKind kind() const override { return BackendKind::cuda; }
  std::string description() const override { return "fake device over " + cpu_->description(); }

  void* allocate(size_t bytes) override {
    void* pointer = std::malloc(bytes == 0 ? 1 : bytes);
    if (!pointer) fail(Status::out_of_memory, "fake device: out of memory");
    std::memset(pointer, 0xCD, bytes);
    live_[static_cast<const char*>(pointer)] = bytes == 0 ? 1 : bytes;
    return pointer;
  }
  void deallocate(void* pointer) noexcept override {
    live_.erase(static_cast<const char*>(pointer));
    std::free(pointer);
  }
  void upload(void* dst, const void* src, size_t bytes) override { transfer(dst, src, bytes, dst); }
  void download(void* dst, const void* src, size_t bytes) override { transfer(dst, src, bytes, src); }
  void synchronize() override {}
  void copy_within(void* dst, const void* src, size_t bytes) override {
    require_device({dst, src});
    std::memcpy(dst, src, bytes);
  }
  void zero_fill(void* dst, size_t bytes) override {
    require_device({dst});
    std::memset(dst, 0, bytes);
  }

  void quantize(const void* input, DType dtype, int64_t rows, int64_t cols, const QuantSpec& spec, uint8_t* codes,
                float* scales) override {
    require_device({input, codes, scales});
    if (spec.layout == BlockLayout::block_128x128) ++weight_quantizations;
    cpu_->quantize(input, dtype, rows, cols, spec, codes, scales);
  }
  void dequantize(const Fp8Matrix& matrix, float* output) override {
    require_device({matrix.codes, matrix.scales, output});
    cpu_->dequantize(matrix, output);
  }
  void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) override {
    require_device({a.codes, a.scales, w.codes, w.scales, c});
    if (fail_gemm) fail(Status::cuda_error, "fake device: injected GEMM failure");
    cpu_->gemm_fp8(a, w, c, c_dtype);
  }
  void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                 DType c_dtype) override {
    require_device({a, w, c});
    cpu_->gemm_bf16(a, w, m, n, k, c, c_dtype);
  }

  void embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                 float* out) override {
    require_device({table, ids, out});
    cpu_->embedding(table, vocab, hidden, ids, count, out);
  }
  void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) override {
    require_device({x, weight, out});
    cpu_->rms_norm(x, weight, rows, dim, eps, out);
  }
  void rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, const float* cos,
            const float* sin, int64_t table_positions) override {
    require_device({x, positions, cos, sin});
    cpu_->rope(x, positions, tokens, heads, head_dim, cos, sin, table_positions);
  }
  void swiglu(const float* gate, const float* up, int64_t count, float* out) override {
    require_device({gate, up, out});
    cpu_->swiglu(gate, up, count, out);
  }
  void add(float* x, const float* y, int64_t count) override {
    require_device({x, y});
    cpu_->add(x, y, count);
  }
  void add_bias(float* x, const float* bias, int64_t rows, int64_t cols) override {
    require_device({x, bias});
    cpu_->add_bias(x, bias, rows, cols);
  }
  void transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out) override {
    require_device({x, out});
    cpu_->transpose_to_bf16(x, rows, cols, out);
  }
  void to_bf16(const float* x, int64_t count, uint16_t* out) override {
    require_device({x, out});
    cpu_->to_bf16(x, count, out);
  }
  void transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) override {
    require_device({x, out});
    cpu_->transpose(x, rows, cols, element_bytes, out);
  }
  void gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out) override {
    require_device({x, rows, out});
    cpu_->gather_rows(x, cols, rows, count, out);
  }
  void moe_route(const MoeRouteArgs& args) override {
    require_device({args.x, args.router, args.logits, args.chosen, args.weights});
    if (args.replayed) require_device({args.replayed});
    cpu_->moe_route(args);
  }
  void moe_combine(const MoeCombineArgs& args) override {
    require_device({args.expert_out, args.slot_rows, args.weights, args.out});
    cpu_->moe_combine(args);
  }
  void moe_route_backward(const MoeRouteBackwardArgs& args) override {
    require_device({args.x, args.router, args.logits, args.used, args.weights, args.dweights, args.dlogits, args.dx,
                    args.drouter});
    if (args.aux_grad) require_device({args.aux_grad});
    cpu_->moe_route_backward(args);
  }
  void moe_combine_backward(const MoeCombineBackwardArgs& args) override {
    require_device({args.dout, args.expert_out, args.slot_rows, args.weights, args.dexpert_out, args.dweights});
    cpu_->moe_combine_backward(args);
  }
  void kv_store(const KvStoreArgs& args) override {
    require_device({args.source, args.cache_rows, args.cache});
    cpu_->kv_store(args);
  }
  void attention(const AttentionArgs& args) override {
    require_device({args.q, args.k_cache, args.v_cache, args.key_begin, args.key_count, args.out});
    cpu_->attention(args);
  }
  void sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
              float* logprobs) override {
    require_device({logits, params, tokens, logprobs});
    cpu_->sample(logits, rows, vocab, params, tokens, logprobs);
  }
  void token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                      const int32_t* targets, float* logprobs) override {
    require_device({logits, params, targets, logprobs});
    cpu_->token_logprobs(logits, rows, vocab, params, targets, logprobs);
  }

  void rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows, int64_t dim, float eps,
                         float* dx, float* dweight) override {
    require_device({x, weight, dy, dx, dweight});
    cpu_->rms_norm_backward(x, weight, dy, rows, dim, eps, dx, dweight);
  }
  void rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                     const float* cos, const float* sin, int64_t table_positions) override {
    require_device({g, positions, cos, sin});
    cpu_->rope_backward(g, positions, tokens, heads, head_dim, cos, sin, table_positions);
  }
  void swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count, float* dgate,
                       float* dup) override {
    require_device({gate, up, dout, dgate, dup});
    cpu_->swiglu_backward(gate, up, dout, count, dgate, dup);
  }
  void embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab, int64_t hidden,
                          float* dtable) override {
    require_device({dy, ids, dtable});
    cpu_->embedding_backward(dy, ids, count, vocab, hidden, dtable);
  }
  void attention_backward(const AttentionBackwardArgs& args) override {
    const AttentionArgs& f = args.forward;
    require_device({f.q, f.k_cache, f.v_cache, f.key_begin, f.key_count, args.dout, args.dq, args.dk, args.dv});
    cpu_->attention_backward(args);
  }
  void log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                            const int32_t* targets, const float* coef, float* dlogits, float* entropy) override {
    require_device({logits, params, targets, coef, dlogits, entropy});
    cpu_->log_softmax_backward(logits, rows, vocab, params, targets, coef, dlogits, entropy);
  }

  void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                    const AdamWScalars& scalars) override {
    require_device({params, grads, exp_avg, exp_avg_sq});
    cpu_->adamw_update(params, grads, exp_avg, exp_avg_sq, count, scalars);
  }
  double sum_of_squares(const float* x, int64_t count) override {
    require_device({x});
    return cpu_->sum_of_squares(x, count);
  }
  int64_t first_non_finite(const float* x, int64_t count, float scale) override {
    require_device({x});
    return cpu_->first_non_finite(x, count, scale);
  }
  void row_abs_max(const float* x, int64_t rows, int64_t cols, float* out) override {
    require_device({x, out});
    cpu_->row_abs_max(x, rows, cols, out);
  }

  size_t live_allocations() const { return live_.size(); }
  // Whether pointer lies inside a live allocation of this backend.
  bool is_device(const void* pointer) const {
    const char* p = static_cast<const char*>(pointer);
    auto it = live_.upper_bound(p);  // the first allocation starting after p
    if (it == live_.begin()) return false;
    --it;
    return p >= it->first && p < it->first + it->second;
  }

  bool fail_gemm = false;
  int64_t weight_quantizations = 0;  // quantize() calls in 128x128 blocks (the weights' layout)

 private:
  // Operations must only ever see device memory, never a host pointer.
  void require_device(std::initializer_list<const void*> pointers) const {
    for (const void* p : pointers)
      if (!is_device(p)) fail(Status::internal, "fake device: got a host pointer");
  }
  void transfer(void* dst, const void* src, size_t bytes, const void* device_side) {
    require_device({device_side});
    std::memcpy(dst, src, bytes);
  }

  std::unique_ptr<Backend> cpu_;
  std::map<const char*, size_t> live_;  // allocation start -> size (at least 1)
};

}  // namespace fp8rl::test
