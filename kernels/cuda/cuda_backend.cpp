#include <cstdio>

#include "../backend_checks.h"
#include "../moe_checks.h"
#include "../optimizer_checks.h"
#include "../transformer_backward_checks.h"
#include "../transformer_checks.h"
#include "attention_kernels.h"
#include "cuda_backend_impl.h"
#include "moe_kernels.h"
#include "optimizer_kernels.h"
#include "quantize_kernels.h"
#include "sampling_kernels.h"
#include "transformer_kernels.h"

namespace fp8rl {
namespace cuda {
namespace {

std::string device_description(int device, const cudaDeviceProp& prop) {
  char text[1024];  // prop.name holds up to 256 characters
  std::snprintf(text, sizeof text, "CUDA device %d: %s (compute capability %d.%d, %d SMs, %.1f GiB), cuBLASLt %zu",
                device, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), cublasLtGetVersion());
  return text;
}

cudaDeviceProp usable_device(int device) {
  const int count = cuda_device_count();
  if (device < 0 || device >= count)
    fail(Status::backend_unavailable, "CUDA backend: device " + std::to_string(device) + " does not exist (" +
                                          std::to_string(count) + " CUDA devices visible)");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  if (prop.major < 9)
    fail(Status::backend_unavailable, "CUDA backend: device " + std::to_string(device) + " (" + prop.name +
                                          ") has compute capability " + std::to_string(prop.major) + "." +
                                          std::to_string(prop.minor) + "; this build needs 9.0 (Hopper) or newer");
  return prop;
}

}  // namespace

CudaBackend::CudaBackend(int device) : device_(device) {
  const cudaDeviceProp prop = usable_device(device);
  description_ = device_description(device, prop);
  activate();
  cudaStream_t stream = nullptr;
  // Non-blocking: the legacy default stream, which other code in the process
  // may use, never serializes with ours.
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  stream_.reset(stream);
  lt_ = std::make_unique<LtGemm>();
  fp8_ = std::make_unique<Fp8Gemm>(*lt_);
}

CudaBackend::~CudaBackend() {
  // Members free device memory: they need this device current and the
  // stream's work finished. Errors cannot be reported from here.
  (void)cudaSetDevice(device_);
  (void)cudaStreamSynchronize(stream_.get());
}

void CudaBackend::activate() const { check_cuda(cudaSetDevice(device_), "cudaSetDevice"); }

void* CudaBackend::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  activate();
  void* pointer = nullptr;
  check_cuda(cudaMalloc(&pointer, bytes),
             ("cudaMalloc of " + std::to_string(bytes) + " bytes on device " + std::to_string(device_)).c_str());
  return pointer;
}

void CudaBackend::deallocate(void* pointer) noexcept {
  if (pointer == nullptr) return;
  (void)cudaSetDevice(device_);
  (void)cudaFree(pointer);  // waits for the device, so no kernel still reads it
}

void CudaBackend::upload(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  require(device_dst && host_src, "upload: null pointer");
  activate();
  check_cuda(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream()),
             "cudaMemcpyAsync (upload)");
  synchronize();  // the caller may reuse host_src as soon as we return
}

void CudaBackend::download(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  require(host_dst && device_src, "download: null pointer");
  activate();
  check_cuda(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream()),
             "cudaMemcpyAsync (download)");
  synchronize();
}

void CudaBackend::copy_within(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  require(dst && src, "copy_within: null pointer");
  activate();
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()), "cudaMemcpyAsync (copy_within)");
}

void CudaBackend::zero_fill(void* dst, size_t bytes) {
  if (bytes == 0) return;
  require(dst != nullptr, "zero_fill: null pointer");
  activate();
  check_cuda(cudaMemsetAsync(dst, 0, bytes, stream()), "cudaMemsetAsync (zero_fill)");
}

void CudaBackend::synchronize() {
  activate();
  check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
}

void CudaBackend::quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                           uint8_t* codes, float* scales) {
  activate();
  cuda::quantize(input, input_dtype, rows, cols, spec, codes, scales, stream());
}

void CudaBackend::dequantize(const Fp8Matrix& matrix, float* output) {
  activate();
  cuda::dequantize(matrix, output, stream());
}

void CudaBackend::gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) {
  activate();
  fp8_->run(a, w, c, c_dtype, stream());
}

void CudaBackend::gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                            DType c_dtype) {
  if (!check_gemm_bf16_args(a, w, m, n, k, c, c_dtype)) return;
  activate();
  LtMatmul mm;
  mm.kind = LtKind::bf16;
  mm.m = m;
  mm.n = n;
  mm.k = k;
  mm.a = a;
  mm.w = w;
  mm.c = c;
  mm.c_dtype = c_dtype;
  lt_->run(mm, stream());
}

void CudaBackend::embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                            float* out) {
  if (!check_embedding_args(table, vocab, hidden, ids, count, out)) return;
  activate();
  launch_embedding(table, vocab, hidden, ids, count, out, stream());
}

void CudaBackend::rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) {
  if (!check_rms_norm_args(x, weight, rows, dim, eps, out)) return;
  activate();
  launch_rms_norm(x, weight, rows, dim, eps, out, stream());
}

void CudaBackend::rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                       const float* cos, const float* sin, int64_t table_positions) {
  if (!check_rope_args(x, positions, tokens, heads, head_dim, cos, sin, table_positions)) return;
  activate();
  launch_rope(x, positions, tokens, heads, head_dim, cos, sin, table_positions, stream());
}

void CudaBackend::swiglu(const float* gate, const float* up, int64_t count, float* out) {
  if (!check_elementwise_args("swiglu", count, {gate, up, out})) return;
  activate();
  launch_swiglu(gate, up, count, out, stream());
}

void CudaBackend::add(float* x, const float* y, int64_t count) {
  if (!check_elementwise_args("add", count, {x, y})) return;
  activate();
  launch_add(x, y, count, stream());
}

void CudaBackend::add_bias(float* x, const float* bias, int64_t rows, int64_t cols) {
  if (!check_add_bias_args(x, bias, rows, cols)) return;
  activate();
  launch_add_bias(x, bias, rows, cols, stream());
}

void CudaBackend::transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) {
  if (!check_transpose_args(x, rows, cols, element_bytes, out)) return;
  activate();
  launch_transpose(x, rows, cols, element_bytes, out, stream());
}

void CudaBackend::transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out) {
  if (!check_rows("transpose_to_bf16", rows, "rows", cols, "cols") ||
      !check_elementwise_args("transpose_to_bf16", rows, {x, out}))
    return;
  activate();
  launch_transpose_to_bf16(x, rows, cols, out, stream());
}

void CudaBackend::to_bf16(const float* x, int64_t count, uint16_t* out) {
  if (!check_elementwise_args("to_bf16", count, {x, out})) return;
  activate();
  launch_to_bf16(x, count, out, stream());
}

void CudaBackend::gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out) {
  if (!check_gather_rows_args(x, cols, rows, count, out)) return;
  activate();
  launch_gather_rows(x, cols, rows, count, out, stream());
}

void CudaBackend::moe_route(const MoeRouteArgs& args) {
  if (!check_moe_route_args(args)) return;
  activate();
  launch_moe_route(args, stream());
}

void CudaBackend::moe_combine(const MoeCombineArgs& args) {
  if (!check_moe_combine_args(args)) return;
  activate();
  launch_moe_combine(args, stream());
}

void CudaBackend::moe_route_backward(const MoeRouteBackwardArgs& args) {
  if (!check_moe_route_backward_args(args)) return;
  activate();
  launch_moe_route_backward(args, stream());
}

void CudaBackend::moe_combine_backward(const MoeCombineBackwardArgs& args) {
  if (!check_moe_combine_backward_args(args)) return;
  activate();
  launch_moe_combine_backward(args, stream());
}

void CudaBackend::kv_store(const KvStoreArgs& args) {
  if (!check_kv_store_args(args)) return;
  activate();
  launch_kv_store(args, stream());
}

void CudaBackend::attention(const AttentionArgs& args) {
  if (!check_attention_args(args)) return;
  activate();
  launch_attention(args, workspace_.reserve(attention_workspace_bytes(args)), stream());
}

void CudaBackend::sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
                         float* logprobs) {
  if (!check_sampling_args("sample", logits, rows, vocab, params, tokens, logprobs)) return;
  activate();
  launch_sample(logits, rows, vocab, params, tokens, logprobs,
                workspace_.reserve(sampling_workspace_bytes(rows, vocab)), stream());
}

void CudaBackend::token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                 const int32_t* targets, float* logprobs) {
  if (!check_sampling_args("token_logprobs", logits, rows, vocab, params, targets, logprobs)) return;
  activate();
  launch_token_logprobs(logits, rows, vocab, params, targets, logprobs,
                        workspace_.reserve(sampling_workspace_bytes(rows, vocab)), stream());
}

void CudaBackend::rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows, int64_t dim,
                                    float eps, float* dx, float* dweight) {
  if (!check_rms_norm_backward_args(x, weight, dy, rows, dim, eps, dx, dweight)) return;
  activate();
  launch_rms_norm_backward(x, weight, dy, rows, dim, eps, dx, dweight,
                           workspace_.reserve(rms_norm_backward_workspace_bytes(rows)), stream());
}

void CudaBackend::rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                                const float* cos, const float* sin, int64_t table_positions) {
  if (!check_rope_backward_args(g, positions, tokens, heads, head_dim, cos, sin, table_positions)) return;
  activate();
  launch_rope_backward(g, positions, tokens, heads, head_dim, cos, sin, table_positions, stream());
}

void CudaBackend::swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count, float* dgate,
                                  float* dup) {
  if (!check_elementwise_args("swiglu_backward", count, {gate, up, dout, dgate, dup})) return;
  activate();
  launch_swiglu_backward(gate, up, dout, count, dgate, dup, stream());
}

void CudaBackend::embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab, int64_t hidden,
                                     float* dtable) {
  if (!check_embedding_backward_args(dy, ids, count, vocab, hidden, dtable)) return;
  activate();
  launch_embedding_backward(dy, ids, count, vocab, hidden, dtable, stream());
}

void CudaBackend::attention_backward(const AttentionBackwardArgs& args) {
  if (!check_attention_backward_args(args)) return;
  activate();
  launch_attention_backward(args, workspace_.reserve(attention_backward_workspace_bytes(args)), stream());
}

void CudaBackend::log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                       const int32_t* targets, const float* coef, float* dlogits, float* entropy) {
  if (!check_log_softmax_backward_args(logits, rows, vocab, params, targets, coef, dlogits, entropy)) return;
  activate();
  launch_log_softmax_backward(logits, rows, vocab, params, targets, coef, dlogits, entropy, stream());
}

void CudaBackend::adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                               const AdamWScalars& scalars) {
  if (!check_adamw_update_args(params, grads, exp_avg, exp_avg_sq, count, scalars)) return;
  activate();
  launch_adamw_update(params, grads, exp_avg, exp_avg_sq, count, scalars, stream());
}

double CudaBackend::sum_of_squares(const float* x, int64_t count) {
  if (!check_sum_of_squares_args(x, count)) return 0.0;
  activate();
  const double* total = launch_sum_of_squares(x, count, workspace_.reserve(reduction_workspace_bytes(count)), stream());
  double result = 0.0;
  download(&result, total, sizeof result);
  return result;
}

int64_t CudaBackend::first_non_finite(const float* x, int64_t count, float scale) {
  if (!check_first_non_finite_args(x, count)) return -1;
  activate();
  const int64_t* found =
      launch_first_non_finite(x, count, scale, workspace_.reserve(reduction_workspace_bytes(count)), stream());
  int64_t result = -1;
  download(&result, found, sizeof result);
  return result;
}

void CudaBackend::row_abs_max(const float* x, int64_t rows, int64_t cols, float* out) {
  if (!check_row_abs_max_args(x, rows, cols, out)) return;
  activate();
  launch_row_abs_max(x, rows, cols, out, stream());
}

}  // namespace cuda

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: not an error for callers
    return 0;
  }
  return count;
}

std::unique_ptr<Backend> make_cuda_backend(int device) { return std::make_unique<cuda::CudaBackend>(device); }

}  // namespace fp8rl
