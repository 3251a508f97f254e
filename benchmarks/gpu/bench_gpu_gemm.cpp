// GPU GEMM throughput: our block-scaled FP8 GEMM (E4M3, A in 1x128 tiles, W
// in 128x128 blocks, BF16 out) against cuBLASLt's BF16 GEMM (BF16 out), both
// through the CUDA backend, on square shapes and Llama-3.1-8B's linear layers
// at 4096 tokens. Times are CUDA-event medians of 20 runs after 3 warm-ups.
// The FP8 time is the whole gemm_fp8 call (scale rearrangement for cuBLASLt
// included); quantizing the inputs is not timed.
//
//   fp8rl_bench_gpu_gemm [--quick]     (--quick: the 1024 and 2048 squares only)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/gpu/bench_fill.h"
#include "kernels/cuda/cuda_backend_impl.h"

namespace fp8rl::bench {
namespace {

constexpr int kWarmups = 3;
constexpr int kRepetitions = 20;

struct Shape {
  std::string name;
  int64_t m, n, k;
};

struct Result {
  Shape shape;
  double bf16_tflops, fp8_tflops;
  std::string fp8_algorithm;
};

std::vector<Shape> shapes(bool quick) {
  std::vector<Shape> list;
  for (const int64_t size : {1024, 2048, 4096, 8192}) {
    if (quick && size > 2048) break;
    list.push_back({"square " + std::to_string(size), size, size, size});
  }
  if (quick) return list;
  constexpr int64_t kTokens = 4096;  // Llama-3.1-8B: hidden 4096, 32+8+8 heads of 128, MLP 14336
  list.push_back({"llama-8B qkv", kTokens, 6144, 4096});
  list.push_back({"llama-8B o", kTokens, 4096, 4096});
  list.push_back({"llama-8B gate_up", kTokens, 28672, 4096});
  list.push_back({"llama-8B down", kTokens, 4096, 14336});
  return list;
}

// Device memory of the backend, freed with the scope.
class Device {
 public:
  Device(Backend& backend, size_t bytes) : backend_(backend), data_(backend.allocate(bytes)) {}
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() { backend_.deallocate(data_); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  Backend& backend_;
  void* data_;
};

class EventTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {
    cuda::check_cuda(cudaEventCreate(&start_), "cudaEventCreate");
    cuda::check_cuda(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer() {
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
  }

  // Median milliseconds of op over kRepetitions, after kWarmups.
  double median_ms(const std::function<void()>& op) {
    for (int i = 0; i < kWarmups; ++i) op();
    std::vector<float> times;
    for (int i = 0; i < kRepetitions; ++i) {
      cuda::check_cuda(cudaEventRecord(start_, stream_), "cudaEventRecord");
      op();
      cuda::check_cuda(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      cuda::check_cuda(cudaEventSynchronize(stop_), "cudaEventSynchronize");
      float ms = 0.0f;
      cuda::check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    return 0.5 * (times[(times.size() - 1) / 2] + times[times.size() / 2]);
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

double tflops(const Shape& s, double ms) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) / (ms * 1e9);
}

Result measure(cuda::CudaBackend& backend, EventTimer& timer, const Shape& s) {
  const auto count = [](int64_t rows, int64_t cols) { return static_cast<size_t>(rows * cols); };
  const Device a16(backend, count(s.m, s.k) * 2), w16(backend, count(s.n, s.k) * 2);  // [M, K], [N, K] bf16
  fill_random_bf16(a16.as<uint16_t>(), s.m * s.k, 1, backend.stream());
  fill_random_bf16(w16.as<uint16_t>(), s.n * s.k, 2, backend.stream());

  const QuantSpec a_spec{Fp8Format::e4m3, BlockLayout::tile_1x128, ScaleFormat::fp32, true};
  const QuantSpec w_spec{Fp8Format::e4m3, BlockLayout::block_128x128, ScaleFormat::fp32, true};
  const Device a8(backend, count(s.m, s.k)), w8(backend, count(s.n, s.k));  // codes [M, K], [N, K]
  const auto scale_bytes = [](const QuantSpec& spec, int64_t rows, int64_t cols) {
    return static_cast<size_t>(scale_shape(spec.layout, rows, cols).count()) * sizeof(float);
  };
  const Device a_scales(backend, scale_bytes(a_spec, s.m, s.k)), w_scales(backend, scale_bytes(w_spec, s.n, s.k));
  backend.quantize(a16.as<void>(), DType::bf16, s.m, s.k, a_spec, a8.as<uint8_t>(), a_scales.as<float>());
  backend.quantize(w16.as<void>(), DType::bf16, s.n, s.k, w_spec, w8.as<uint8_t>(), w_scales.as<float>());
  const Fp8Matrix a{a8.as<uint8_t>(), a_scales.as<float>(), s.m, s.k, a_spec.layout, Fp8Format::e4m3};
  const Fp8Matrix w{w8.as<uint8_t>(), w_scales.as<float>(), s.n, s.k, w_spec.layout, Fp8Format::e4m3};
  const Device c(backend, count(s.m, s.n) * 2);  // [M, N] bf16

  const double bf16_ms = timer.median_ms(
      [&] { backend.gemm_bf16(a16.as<uint16_t>(), w16.as<uint16_t>(), s.m, s.n, s.k, c.as<void>(), DType::bf16); });
  const double fp8_ms = timer.median_ms([&] { backend.gemm_fp8(a, w, c.as<void>(), DType::bf16); });
  backend.synchronize();
  return Result{s, tflops(s, bf16_ms), tflops(s, fp8_ms), backend.last_gemm_algorithm()};
}

void print_table(const std::string& device, const std::vector<Result>& results) {
  std::printf("\n## GEMM throughput, FP8 block-scaled vs BF16 (cuBLASLt, BF16 output)\n\n");
  std::printf("%s; median of %d runs after %d warm-ups\n\n", device.c_str(), kRepetitions, kWarmups);
  std::printf("| shape | M | N | K | BF16 TFLOP/s | FP8 TFLOP/s | FP8 / BF16 | FP8 cuBLASLt algorithm |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  for (const Result& r : results)
    std::printf("| %s | %lld | %lld | %lld | %.1f | %.1f | %.2f | %s |\n", r.shape.name.c_str(),
                static_cast<long long>(r.shape.m), static_cast<long long>(r.shape.n), static_cast<long long>(r.shape.k),
                r.bf16_tflops, r.fp8_tflops, r.fp8_tflops / r.bf16_tflops, r.fp8_algorithm.c_str());
}

int run(bool quick) {
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "fp8rl_bench_gpu_gemm: no CUDA device\n");
    return 1;
  }
  const std::unique_ptr<Backend> owned = make_cuda_backend(0);
  auto& backend = dynamic_cast<cuda::CudaBackend&>(*owned);
  EventTimer timer(backend.stream());
  std::vector<Result> results;
  for (const Shape& shape : shapes(quick)) {
    results.push_back(measure(backend, timer, shape));
    std::fprintf(stderr, "measured %s\n", shape.name.c_str());
  }
  print_table(backend.description(), results);
  return 0;
}

}  // namespace
}  // namespace fp8rl::bench

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  try {
    return fp8rl::bench::run(quick);
  } catch (const fp8rl::Error& error) {
    std::fprintf(stderr, "fp8rl_bench_gpu_gemm: %s\n", error.what());
    return 1;
  }
}
