// The CPU backend: the reference implementation of kernels/backend.h.
//
// Thread safety: operations may be called from several threads; the ones
// that use the worker pool and the GEMM scratch take turns on one mutex.
#include "cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

#include "../backend_checks.h"
#include "aligned_memory.h"
#include "gemm_cpu.h"
#include "quantize_cpu.h"
#include "thread_pool.h"

namespace fp8rl {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(int num_threads, SimdLevel simd) : pool_(num_threads), kernels_(cpu::gemm_kernels(simd)) {}

  BackendKind kind() const override { return BackendKind::cpu; }

  std::string description() const override {
    const int threads = pool_.size();
    return std::string("CPU (") + simd_level_name(kernels_.level) + ", " + std::to_string(threads) +
           (threads == 1 ? " thread)" : " threads)");
  }

  void* allocate(size_t bytes) override { return cpu::aligned_allocate(bytes); }
  void deallocate(void* pointer) noexcept override { cpu::aligned_free(pointer); }

  void upload(void* device_dst, const void* host_src, size_t bytes) override {
    copy(device_dst, host_src, bytes, "upload");
  }
  void download(void* host_dst, const void* device_src, size_t bytes) override {
    copy(host_dst, device_src, bytes, "download");
  }
  void synchronize() override {}  // every operation completes before it returns

  void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec, uint8_t* codes,
                float* scales) override {
    check_quantize_args(input, input_dtype, rows, cols, spec, codes, scales);
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.parallel_for(cpu::quantize_work_units(spec.layout, rows), [&](int64_t begin, int64_t end) {
      cpu::quantize_units(input, input_dtype, rows, cols, spec, codes, scales, begin, end);
    });
  }

  void dequantize(const Fp8Matrix& matrix, float* output) override {
    check_dequantize_args(matrix, output);
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.parallel_for(matrix.rows,
                       [&](int64_t begin, int64_t end) { cpu::dequantize_rows(matrix, output, begin, end); });
  }

  void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) override {
    if (!check_gemm_fp8_args(a, w, c, c_dtype)) return;
    cpu::GemmOperand a_operand, w_operand;
    a_operand.fp8 = &a;
    w_operand.fp8 = &w;
    std::lock_guard<std::mutex> lock(mutex_);
    cpu::gemm_cpu(kernels_, pool_, workspace_, a_operand, w_operand, a.rows, w.rows, a.cols, c, c_dtype);
  }

  void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                 DType c_dtype) override {
    if (!check_gemm_bf16_args(a, w, m, n, k, c, c_dtype)) return;
    cpu::GemmOperand a_operand, w_operand;
    a_operand.bf16 = a;
    w_operand.bf16 = w;
    std::lock_guard<std::mutex> lock(mutex_);
    cpu::gemm_cpu(kernels_, pool_, workspace_, a_operand, w_operand, m, n, k, c, c_dtype);
  }

 private:
  static void copy(void* dst, const void* src, size_t bytes, const char* what) {
    if (bytes == 0) return;
    require(dst && src, std::string(what) + ": null pointer");
    std::memcpy(dst, src, bytes);
  }

  cpu::ThreadPool pool_;
  const cpu::GemmKernels& kernels_;
  std::mutex mutex_;
  cpu::GemmWorkspace workspace_;
};

int default_thread_count() {
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int num_threads) {
  return make_cpu_backend(num_threads, detect_simd_level());
}

std::unique_ptr<Backend> make_cpu_backend(int num_threads, SimdLevel simd) {
  const SimdLevel supported = detect_simd_level();
  const SimdLevel level = static_cast<uint8_t>(simd) < static_cast<uint8_t>(supported) ? simd : supported;
  return std::make_unique<CpuBackend>(num_threads <= 0 ? default_thread_count() : num_threads, level);
}

}  // namespace fp8rl
