// The CUDA backend class behind make_cuda_backend(). The core needs only
// cuda_backend.h; GPU tests and benchmarks include this to reach the stream
// (to time work with CUDA events) and the GEMM algorithm reports.
//
// Every operation is enqueued on the backend's own stream and returns without
// waiting; upload, download and synchronize wait for the stream, and that is
// where a fault inside a kernel surfaces (as Error(cuda_error)). Each call
// first makes the backend's device current on the calling thread.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "cuda_backend.h"
#include "device_buffer.h"
#include "fp8_gemm.h"
#include "lt_gemm.h"

namespace fp8rl::cuda {

struct StreamDestroy {
  void operator()(cudaStream_t stream) const noexcept { (void)cudaStreamDestroy(stream); }
};
using StreamHandle = std::unique_ptr<CUstream_st, StreamDestroy>;

class CudaBackend final : public Backend {
 public:
  // Throws Error(backend_unavailable) without a driver, for a device index
  // out of range, or below compute capability 9.0.
  explicit CudaBackend(int device);
  ~CudaBackend() override;

  BackendKind kind() const override { return BackendKind::cuda; }
  std::string description() const override { return description_; }

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

  // Transformer operations: kernels that share kernels/common with the CPU
  // backend and follow its arithmetic order (transformer_kernels.h,
  // attention_kernels.h, sampling_kernels.h). Index and value checks that
  // need the data (token ids, key ranges, non-finite logits) cannot throw
  // from the device: such rows come out NaN (or token -1) instead.
  void embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                 float* out) override;
  void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) override;
  void rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, const float* cos,
            const float* sin, int64_t table_positions) override;
  void swiglu(const float* gate, const float* up, int64_t count, float* out) override;
  void add(float* x, const float* y, int64_t count) override;
  void add_bias(float* x, const float* bias, int64_t rows, int64_t cols) override;
  void to_bf16(const float* x, int64_t count, uint16_t* out) override;
  void transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) override;
  void transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out) override;
  void gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out) override;
  void moe_route(const MoeRouteArgs& args) override;
  void moe_combine(const MoeCombineArgs& args) override;
  void moe_route_backward(const MoeRouteBackwardArgs& args) override;
  void moe_combine_backward(const MoeCombineBackwardArgs& args) override;
  void kv_store(const KvStoreArgs& args) override;
  void attention(const AttentionArgs& args) override;
  void sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
              float* logprobs) override;
  void token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                      const int32_t* targets, float* logprobs) override;

  // Backward transformer operations, likewise.
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

  // Optimizer and calibration operations (optimizer_kernels.h): bit-identical
  // to the CPU backend's. sum_of_squares and first_non_finite wait for their result.
  void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                    const AdamWScalars& scalars) override;
  double sum_of_squares(const float* x, int64_t count) override;
  int64_t first_non_finite(const float* x, int64_t count, float scale) override;
  void row_abs_max(const float* x, int64_t rows, int64_t cols, float* out) override;

  cudaStream_t stream() const noexcept { return stream_.get(); }
  int device() const noexcept { return device_; }
  // The cuBLASLt algorithm of the last GEMM, e.g. "id=66 tile=20 stages=8 splitk=1 cluster=2".
  std::string last_gemm_algorithm() const { return lt_->last_algorithm(); }
  // GEMM shapes that could not reuse their (N, K) reference algorithm (lt_gemm.h).
  int64_t gemm_fallback_plans() const { return lt_->fallback_plan_count(); }

 private:
  void activate() const;

  int device_;
  std::string description_;
  // Destroyed in reverse order: the FP8 GEMM (it uses the cuBLASLt wrapper),
  // the wrapper, then the stream.
  StreamHandle stream_;
  // Scratch of the kernels that need it (attention scores, sampling orders,
  // reduction partials):
  // grow-only and used in stream order, so no operation allocates once warm.
  DeviceBuffer workspace_;
  std::unique_ptr<LtGemm> lt_;
  std::unique_ptr<Fp8Gemm> fp8_;
};

}  // namespace fp8rl::cuda
