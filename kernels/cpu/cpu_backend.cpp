// The CPU backend: the reference implementation of kernels/backend.h.
//
// Thread safety: operations may be called from several threads; the ones
// that use the worker pool and the GEMM scratch take turns on one mutex.
#include "cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

#include "aligned_memory.h"
#include "gemm_cpu.h"
#include "quantize_cpu.h"
#include "thread_pool.h"

namespace fp8rl {
namespace {

// Element counts beyond this are refused: they cannot be allocated anyway,
// and keeping them small keeps every index product far from overflow.
constexpr int64_t kMaxElements = int64_t{1} << 48;

bool valid_dtype(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16; }

void require_elements(int64_t rows, int64_t cols, const char* what) {
  require(rows <= kMaxElements / std::max<int64_t>(cols, 1), std::string(what) + ": matrix too large");
}

void check_quantize_args(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                         const uint8_t* codes, const float* scales) {
  require(input && codes && scales, "quantize: null pointer");
  require(rows > 0 && cols > 0, "quantize: rows and cols must be positive");
  require_elements(rows, cols, "quantize");
  require(valid_dtype(input_dtype), "quantize: input dtype must be f32 or bf16");
  require(spec.format == Fp8Format::e4m3 || spec.format == Fp8Format::e5m2, "quantize: unknown FP8 format");
  require(spec.layout == BlockLayout::tile_1x128 || spec.layout == BlockLayout::tile_1x128_transposed ||
              spec.layout == BlockLayout::block_128x128,
          "quantize: unknown block layout");
  require(spec.scale_format == ScaleFormat::fp32 || spec.scale_format == ScaleFormat::pow2,
          "quantize: unknown scale format");
}

void check_fp8_matrix(const Fp8Matrix& matrix, const char* what) {
  require(matrix.codes && matrix.scales, std::string(what) + ": null codes or scales");
  require(matrix.rows > 0 && matrix.cols > 0, std::string(what) + ": rows and cols must be positive");
  require_elements(matrix.rows, matrix.cols, what);
  require(matrix.format == Fp8Format::e4m3 || matrix.format == Fp8Format::e5m2, std::string(what) + ": unknown FP8 format");
  require(matrix.layout == BlockLayout::tile_1x128 || matrix.layout == BlockLayout::tile_1x128_transposed ||
              matrix.layout == BlockLayout::block_128x128,
          std::string(what) + ": unknown block layout");
}

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

  void upload(void* device_dst, const void* host_src, size_t bytes) override { copy(device_dst, host_src, bytes, "upload"); }
  void download(void* host_dst, const void* device_src, size_t bytes) override {
    copy(host_dst, device_src, bytes, "download");
  }
  void synchronize() override {}  // every operation completes before it returns

  void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                uint8_t* codes, float* scales) override {
    check_quantize_args(input, input_dtype, rows, cols, spec, codes, scales);
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.parallel_for(cpu::quantize_work_units(spec.layout, rows), [&](int64_t begin, int64_t end) {
      cpu::quantize_units(input, input_dtype, rows, cols, spec, codes, scales, begin, end);
    });
  }

  void dequantize(const Fp8Matrix& matrix, float* output) override {
    check_fp8_matrix(matrix, "dequantize");
    require(output != nullptr, "dequantize: null output");
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.parallel_for(matrix.rows,
                       [&](int64_t begin, int64_t end) { cpu::dequantize_rows(matrix, output, begin, end); });
  }

  void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) override {
    check_gemm_fp8_operands(a, w);
    require_elements(a.rows, a.cols, "gemm_fp8 (A)");
    require_elements(w.rows, w.cols, "gemm_fp8 (W)");
    require_elements(a.rows, w.rows, "gemm_fp8 (C)");
    require(valid_dtype(c_dtype), "gemm_fp8: output dtype must be f32 or bf16");
    if (a.rows == 0 || w.rows == 0) return;
    require(c != nullptr, "gemm_fp8: null output");
    cpu::GemmOperand a_operand, w_operand;
    a_operand.fp8 = &a;
    w_operand.fp8 = &w;
    std::lock_guard<std::mutex> lock(mutex_);
    cpu::gemm_cpu(kernels_, pool_, workspace_, a_operand, w_operand, a.rows, w.rows, a.cols, c, c_dtype);
  }

  void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                 DType c_dtype) override {
    require(a && w, "gemm_bf16: null operand");
    require(m >= 0 && n >= 0 && k > 0, "gemm_bf16: m, n must be non-negative and k positive");
    require_elements(m, k, "gemm_bf16 (A)");
    require_elements(n, k, "gemm_bf16 (W)");
    require_elements(m, n, "gemm_bf16 (C)");
    require(valid_dtype(c_dtype), "gemm_bf16: output dtype must be f32 or bf16");
    if (m == 0 || n == 0) return;
    require(c != nullptr, "gemm_bf16: null output");
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

std::unique_ptr<Backend> make_cpu_backend(int num_threads) { return make_cpu_backend(num_threads, detect_simd_level()); }

std::unique_ptr<Backend> make_cpu_backend(int num_threads, SimdLevel simd) {
  const SimdLevel supported = detect_simd_level();
  const SimdLevel level = static_cast<uint8_t>(simd) < static_cast<uint8_t>(supported) ? simd : supported;
  return std::make_unique<CpuBackend>(num_threads <= 0 ? default_thread_count() : num_threads, level);
}

}  // namespace fp8rl
