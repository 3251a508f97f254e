// CPU GEMM throughput: our FP8 (E4M3, block-scaled) and BF16 GEMMs against
// OpenBLAS sgemm on the linear layers of a ~100M-parameter Llama-style model,
// all with the same thread count, medians of several timed samples.
//
//   fp8rl_bench_gemm [--threads N] [--quick]
//
// The FP8 GEMM time excludes quantizing A (W is quantized once, as weights
// are); quantizing A is timed on its own and reported as its own column.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/bf16_codec.h"
#include "kernels/cpu/cpu_backend.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int threads = 0;
  bool quick = false;
};

struct Layer {
  const char* name;
  int64_t n, k;
};

struct Timing {
  int samples;            // per configuration
  double sample_seconds;  // minimum length of one sample
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      options.quick = true;
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      options.threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--quick]\n", argv[0]);
      std::exit(2);
    }
  }
  return options;
}

// "model name (family F, model M)" from /proc/cpuinfo: hypervisors often
// shorten the name, the family and model still tell the microarchitecture.
std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, name = "unknown CPU", family, model;
  auto value = [&] { return line.substr(line.find(':') + 2); };
  while (std::getline(cpuinfo, line) && line.find_first_not_of(" \t") != std::string::npos) {
    if (line.rfind("model name", 0) == 0)
      name = value();
    else if (line.rfind("cpu family", 0) == 0)
      family = value();
    else if (line.rfind("model", 0) == 0 && line.rfind("model name", 0) != 0)
      model = value();
  }
  return family.empty() ? name : name + " (family " + family + ", model " + model + ")";
}

// OpenBLAS workers busy-wait for 2^28 cycles (~0.1 s) after a call before
// they sleep; anything timed in that window shares its cores with them.
constexpr std::chrono::milliseconds kOpenBlasSettle{150};

// Median seconds per call of each of fns. The samples of all fns are taken
// in turns, so a change in background load hits them alike and their ratios
// stay fair; each sample repeats its fn for at least sample_seconds. The
// last fn is OpenBLAS: after its samples the others wait for it to settle.
std::vector<double> median_seconds(const std::vector<std::function<void()>>& fns, const Timing& timing) {
  std::vector<int64_t> calls;
  for (const std::function<void()>& fn : fns) {  // warm up and calibrate
    const Clock::time_point start = Clock::now();
    fn();
    const double once = std::chrono::duration<double>(Clock::now() - start).count();
    calls.push_back(std::max<int64_t>(1, static_cast<int64_t>(timing.sample_seconds / std::max(once, 1e-7))));
  }
  std::this_thread::sleep_for(kOpenBlasSettle);
  std::vector<std::vector<double>> samples(fns.size());
  for (int s = 0; s < timing.samples; ++s) {
    for (size_t f = 0; f < fns.size(); ++f) {
      const Clock::time_point start = Clock::now();
      for (int64_t c = 0; c < calls[f]; ++c) fns[f]();
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      samples[f].push_back(elapsed / static_cast<double>(calls[f]));
    }
    std::this_thread::sleep_for(kOpenBlasSettle);
  }
  std::vector<double> medians;
  for (std::vector<double>& v : samples) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    medians.push_back(v[v.size() / 2]);
  }
  return medians;
}

std::vector<float> random_matrix(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(rows * cols));
  for (float& v : values) v = normal(rng);
  return values;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = fp8rl::bf16_encode(values[i]);
  return bits;
}

// Codes and scales of a block-quantized matrix, owned.
struct Quantized {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  fp8rl::Fp8Matrix matrix;
};

Quantized quantize(fp8rl::Backend& backend, const std::vector<float>& values, int64_t rows, int64_t cols,
                   fp8rl::BlockLayout layout) {
  fp8rl::QuantSpec spec;
  spec.layout = layout;
  Quantized q;
  q.codes.resize(static_cast<size_t>(rows * cols));
  q.scales.resize(static_cast<size_t>(fp8rl::scale_shape(layout, rows, cols).count()));
  backend.quantize(values.data(), fp8rl::DType::f32, rows, cols, spec, q.codes.data(), q.scales.data());
  q.matrix = fp8rl::Fp8Matrix{q.codes.data(), q.scales.data(), rows, cols, layout, fp8rl::Fp8Format::e4m3};
  return q;
}

struct Row {
  double fp8, bf16, sgemm, quantize_us;
};

Row measure(fp8rl::Backend& backend, int64_t m, const Layer& layer, const Timing& timing, std::mt19937& rng) {
  const int64_t n = layer.n, k = layer.k;
  const std::vector<float> a = random_matrix(m, k, rng), w = random_matrix(n, k, rng);
  std::vector<float> c(static_cast<size_t>(m * n));
  const Quantized wq = quantize(backend, w, n, k, fp8rl::BlockLayout::block_128x128);
  Quantized aq = quantize(backend, a, m, k, fp8rl::BlockLayout::tile_1x128);
  const std::vector<uint16_t> a16 = to_bf16(a), w16 = to_bf16(w);

  const double flop = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  fp8rl::QuantSpec spec;
  const std::vector<double> seconds = median_seconds(
      {[&] { backend.quantize(a.data(), fp8rl::DType::f32, m, k, spec, aq.codes.data(), aq.scales.data()); },
       [&] { backend.gemm_fp8(aq.matrix, wq.matrix, c.data(), fp8rl::DType::f32); },
       [&] { backend.gemm_bf16(a16.data(), w16.data(), m, n, k, c.data(), fp8rl::DType::f32); },
       [&] {
         cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(m), static_cast<blasint>(n),
                     static_cast<blasint>(k), 1.0f, a.data(), static_cast<blasint>(k), w.data(),
                     static_cast<blasint>(k), 0.0f, c.data(), static_cast<blasint>(n));
       }},
      timing);
  Row row{};
  row.quantize_us = 1e6 * seconds[0];
  row.fp8 = flop / seconds[1] / 1e9;
  row.bf16 = flop / seconds[2] / 1e9;
  row.sgemm = flop / seconds[3] / 1e9;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  std::unique_ptr<fp8rl::Backend> backend = fp8rl::make_cpu_backend(options.threads);
  const std::string description = backend->description();
  const int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  openblas_set_num_threads(threads);

  const Layer layers[] = {{"qkv", 1280, 768}, {"o", 768, 768}, {"gate_up", 4096, 768}, {"down", 768, 2048}};
  const int64_t batch_sizes[] = {1, 16, 256, 2048};
  const Timing timing = options.quick ? Timing{3, 0.01} : Timing{7, 0.03};
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");

  std::printf("# CPU GEMM: FP8 (E4M3, A 1x128 tiles, W 128x128 blocks) and BF16 vs OpenBLAS sgemm\n\n");
  std::printf("Machine: %s; backend %s; OpenBLAS %s (OPENBLAS_CORETYPE=%s, %d threads)\n", cpu_model().c_str(),
              description.c_str(), openblas_get_config(), coretype ? coretype : "unset", openblas_get_num_threads());
  std::printf(
      "GFLOP/s = 2MNK / median time (%d samples, methods measured in turns). FP8 excludes quantizing A (own column); "
      "all outputs f32.\n\n",
      timing.samples);
  std::printf(
      "| M | layer | N | K | FP8 GFLOP/s | BF16 GFLOP/s | sgemm GFLOP/s | FP8/sgemm | BF16/sgemm | quantize A (us) "
      "|\n");
  std::printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::mt19937 rng(1234);
  for (const int64_t m : batch_sizes) {
    for (const Layer& layer : layers) {
      const Row r = measure(*backend, m, layer, timing, rng);
      std::printf("| %lld | %s | %lld | %lld | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f |\n", static_cast<long long>(m),
                  layer.name, static_cast<long long>(layer.n), static_cast<long long>(layer.k), r.fp8, r.bf16, r.sgemm,
                  r.fp8 / r.sgemm, r.bf16 / r.sgemm, r.quantize_us);
      std::fflush(stdout);
    }
  }
  return 0;
}
