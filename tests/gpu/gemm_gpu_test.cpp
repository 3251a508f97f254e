// GPU GEMMs (cuBLASLt) against the CPU backend on the same quantized inputs.
//
// Tolerance, per element: |gpu - cpu| <= 2^-12 * sum_k |a_ik| |w_jk|
// (+ 2^-8 |cpu| for BF16 output). Both sides accumulate in FP32 but in
// different orders, and within each 128-wide K block Hopper's FP8 tensor
// cores keep fewer bits than FP32 before cuBLASLt promotes the partial sum
// (about 14, by the DeepSeek-V3 report), so the bound scales with the sum of
// magnitudes, with a 4x margin over 2^-14; 2^-8 covers rounding to BF16
// (half an ulp is 2^-9). A wrong scale layout or operand order gives errors
// of the order of the values themselves, far above this.
#include <cmath>
#include <iterator>
#include <string>

#include "gpu/gpu_test_support.h"
#include "kernels/cuda/cuda_backend_impl.h"

namespace fp8rl::test {
namespace {

std::vector<float> to_float(const std::vector<uint16_t>& bf16) {
  std::vector<float> values(bf16.size());
  for (size_t i = 0; i < bf16.size(); ++i) values[i] = bf16_decode(bf16[i]);
  return values;
}

// C [m, n] of c_dtype on the backend, as floats.
std::vector<float> output_of(Backend& backend, const Buffer& c, int64_t m, int64_t n, DType c_dtype) {
  const auto count = static_cast<size_t>(m * n);
  if (c_dtype == DType::bf16) return to_float(from_backend<uint16_t>(backend, c, count));
  return from_backend<float>(backend, c, count);
}

// A matrix quantized on one backend; the buffers live as long as this.
struct DeviceFp8 {
  Buffer codes, scales;
  Fp8Matrix matrix;
};

DeviceFp8 quantize_on(Backend& backend, const std::vector<float>& values, int64_t rows, int64_t cols,
                      BlockLayout layout) {
  const Buffer input = to_backend(backend, values);
  DeviceFp8 q{Buffer(backend, static_cast<size_t>(rows * cols)),
              Buffer(backend, static_cast<size_t>(scale_shape(layout, rows, cols).count()) * sizeof(float)),
              Fp8Matrix{}};
  const QuantSpec spec{Fp8Format::e4m3, layout, ScaleFormat::fp32, true};
  backend.quantize(input.as<void>(), DType::f32, rows, cols, spec, q.codes.as<uint8_t>(), q.scales.as<float>());
  q.matrix = Fp8Matrix{q.codes.as<uint8_t>(), q.scales.as<float>(), rows, cols, layout, Fp8Format::e4m3};
  return q;
}

std::vector<float> dequantized(const std::vector<float>& values, int64_t rows, int64_t cols, BlockLayout layout) {
  const DeviceFp8 q = quantize_on(cpu(), values, rows, cols, layout);
  const Buffer output(cpu(), values.size() * sizeof(float));
  cpu().dequantize(q.matrix, output.as<float>());
  return from_backend<float>(cpu(), output, values.size());
}

// sum_k |a_ik| |w_jk| for C [m, n].
std::vector<double> magnitude_sums(const std::vector<float>& a, const std::vector<float>& w, int64_t m, int64_t n,
                                   int64_t k) {
  std::vector<double> sums(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t l = 0; l < k; ++l)
        sum += std::fabs(static_cast<double>(a[static_cast<size_t>(i * k + l)])) *
               std::fabs(static_cast<double>(w[static_cast<size_t>(j * k + l)]));
      sums[static_cast<size_t>(i * n + j)] = sum;
    }
  return sums;
}

void check_close(const std::vector<float>& actual, const std::vector<float>& expected,
                 const std::vector<double>& magnitudes, DType c_dtype, const std::string& label) {
  const double accumulation = std::ldexp(1.0, -12);
  const double output_rounding = c_dtype == DType::bf16 ? std::ldexp(1.0, -8) : 0.0;
  int64_t failures = 0, first_failure = -1;
  double worst = 0.0;  // largest error / bound
  for (size_t i = 0; i < expected.size(); ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    const double bound = accumulation * magnitudes[i] + output_rounding * std::fabs(expected[i]) + 1e-30;
    worst = std::fmax(worst, error / bound);
    if (!(error <= bound)) {
      if (failures++ == 0) first_failure = static_cast<int64_t>(i);
    }
  }
  MESSAGE(label, ": largest error is ", worst, " of the bound");
  CHECK_MESSAGE(failures == 0, label, ": ", failures, " elements out of tolerance, first at ", first_failure,
                failures ? " (gpu " + std::to_string(actual[first_failure]) + ", cpu " +
                               std::to_string(expected[first_failure]) + ")"
                         : std::string());
}

std::string shape_label(const char* what, int64_t m, int64_t n, int64_t k, DType c_dtype) {
  return std::string(what) + " M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
         (c_dtype == DType::bf16 ? " -> bf16" : " -> f32");
}

std::vector<float> fp8_gemm_on(Backend& backend, const std::vector<float>& a, const std::vector<float>& w, int64_t m,
                               int64_t n, int64_t k, BlockLayout w_layout, DType c_dtype) {
  const DeviceFp8 qa = quantize_on(backend, a, m, k, BlockLayout::tile_1x128);
  const DeviceFp8 qw = quantize_on(backend, w, n, k, w_layout);
  const Buffer c(backend, static_cast<size_t>(m * n) * dtype_size(c_dtype));
  backend.gemm_fp8(qa.matrix, qw.matrix, c.as<void>(), c_dtype);
  return output_of(backend, c, m, n, c_dtype);
}

std::vector<float> bf16_gemm_on(Backend& backend, const std::vector<uint16_t>& a, const std::vector<uint16_t>& w,
                                int64_t m, int64_t n, int64_t k, DType c_dtype) {
  const Buffer da = to_backend(backend, a), dw = to_backend(backend, w);
  const Buffer c(backend, static_cast<size_t>(m * n) * dtype_size(c_dtype));
  backend.gemm_bf16(da.as<uint16_t>(), dw.as<uint16_t>(), m, n, k, c.as<void>(), c_dtype);
  return output_of(backend, c, m, n, c_dtype);
}

// The cuBLAS docs list FP32 output for block-scaled FP8; should this
// cuBLASLt refuse it anyway, the backend must say so with Status::unsupported,
// and the test reports it instead of failing.
bool fp32_output_unsupported(Status status, DType c_dtype) {
  const bool unsupported = status == Status::unsupported && c_dtype == DType::f32;
  WARN_MESSAGE(!unsupported, "block-scaled FP8 GEMM with FP32 output is unsupported by this cuBLASLt");
  return unsupported;
}

struct GemmShape {
  int64_t m, n, k;
};

TEST_CASE("cuda gemm_fp8: matches the CPU backend (W in 128x128 blocks and in 1x128 tiles)") {
  struct Case {
    GemmShape shape;
    BlockLayout w_layout;
    const char* why;
  };
  const Case cases[] = {
      {{257, 384, 512}, BlockLayout::block_128x128, "full blocks in N and K"},
      {{3, 200, 336}, BlockLayout::block_128x128, "M % 4 != 0, partial N and K blocks"},
      {{129, 100, 200}, BlockLayout::block_128x128, "N % 8 and K % 16 need padding"},
      {{1, 64, 128}, BlockLayout::block_128x128, "one token"},
      {{130, 136, 272}, BlockLayout::tile_1x128, "wgrad: W in 1x128 tiles"},
      {{5, 99, 40}, BlockLayout::tile_1x128, "wgrad, every dimension padded"},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    const auto [m, n, k] = c.shape;
    const std::vector<float> a = random_matrix(m, k, seed++, 3), w = random_matrix(n, k, seed++, 2);
    const std::vector<double> magnitudes =
        magnitude_sums(dequantized(a, m, k, BlockLayout::tile_1x128), dequantized(w, n, k, c.w_layout), m, n, k);
    const std::vector<float> expected = fp8_gemm_on(cpu(), a, w, m, n, k, c.w_layout, DType::f32);
    for (const DType c_dtype : {DType::bf16, DType::f32}) {
      std::vector<float> actual;
      const Status status = thrown_status([&] { actual = fp8_gemm_on(gpu(), a, w, m, n, k, c.w_layout, c_dtype); });
      if (fp32_output_unsupported(status, c_dtype)) continue;
      REQUIRE(status == Status::ok);
      check_close(actual, expected, magnitudes, c_dtype, shape_label(c.why, m, n, k, c_dtype));
    }
  }
}

TEST_CASE("cuda gemm_bf16: matches the CPU backend") {
  const GemmShape shapes[] = {{257, 384, 512}, {3, 200, 336}, {1, 64, 100}, {129, 99, 77}};
  uint32_t seed = 200;
  for (const auto& [m, n, k] : shapes) {
    const std::vector<uint16_t> a = to_bf16(random_matrix(m, k, seed++, 3)),
                                w = to_bf16(random_matrix(n, k, seed++, 2));
    const std::vector<double> magnitudes = magnitude_sums(to_float(a), to_float(w), m, n, k);
    const std::vector<float> expected = bf16_gemm_on(cpu(), a, w, m, n, k, DType::f32);
    for (const DType c_dtype : {DType::bf16, DType::f32}) {
      const std::vector<float> actual = bf16_gemm_on(gpu(), a, w, m, n, k, c_dtype);
      check_close(actual, expected, magnitudes, c_dtype, shape_label("bf16", m, n, k, c_dtype));
    }
  }
}

// Batch invariance: row i of C must not depend on which other rows are in the
// batch. cuBLASLt promises nothing here; lt_gemm.h pins one algorithm per
// (N, K) to make it so. Reported (WARN), not enforced, until seen on hardware.
TEST_CASE("cuda gemm: a row's result does not depend on the batch size (M=257 vs M=1)") {
  const int64_t m = 257, n = 384, k = 512;
  const int64_t rows[] = {0, 1, 127, 128, 255, 256};
  auto& backend = dynamic_cast<cuda::CudaBackend&>(gpu());
  const std::vector<float> a = random_matrix(m, k, 300, 3), w = random_matrix(n, k, 301, 2);
  const DeviceFp8 qa = quantize_on(gpu(), a, m, k, BlockLayout::tile_1x128);
  const DeviceFp8 qw = quantize_on(gpu(), w, n, k, BlockLayout::block_128x128);
  const std::vector<uint16_t> a16 = to_bf16(a), w16 = to_bf16(w);
  const Buffer da16 = to_backend(gpu(), a16), dw16 = to_backend(gpu(), w16);
  const int64_t k_blocks = ceil_div(k, kQuantBlock);

  for (const bool fp8 : {true, false})
    for (const DType c_dtype : {DType::bf16, DType::f32}) {
      // C[rows, n] for rows [row0, row0 + count) of A.
      auto run = [&](int64_t row0, int64_t count) {
        const Buffer c(gpu(), static_cast<size_t>(count * n) * dtype_size(c_dtype));
        if (fp8) {
          Fp8Matrix part = qa.matrix;
          part.codes += row0 * k;
          part.scales += row0 * k_blocks;
          part.rows = count;
          gpu().gemm_fp8(part, qw.matrix, c.as<void>(), c_dtype);
        } else {
          gpu().gemm_bf16(da16.as<uint16_t>() + row0 * k, dw16.as<uint16_t>(), count, n, k, c.as<void>(), c_dtype);
        }
        return output_of(gpu(), c, count, n, c_dtype);
      };
      std::vector<float> batch;
      const Status status = thrown_status([&] { batch = run(0, m); });
      if (fp8 && fp32_output_unsupported(status, c_dtype)) continue;
      REQUIRE(status == Status::ok);
      const std::string batch_algorithm = backend.last_gemm_algorithm();
      int identical = 0;
      for (const int64_t row : rows) {
        const std::vector<float> single = run(row, 1);
        const std::vector<float> batch_row(batch.begin() + row * n, batch.begin() + (row + 1) * n);
        identical += first_difference(single, batch_row) == -1 ? 1 : 0;
      }
      const std::string label = std::string(fp8 ? "fp8" : "bf16") + (c_dtype == DType::bf16 ? " -> bf16" : " -> f32");
      MESSAGE(label, ": ", identical, " of ", std::size(rows), " rows bitwise identical for M=257 and M=1; ",
              "algorithms M=257 [", batch_algorithm, "], M=1 [", backend.last_gemm_algorithm(), "], ",
              backend.gemm_fallback_plans(), " fallback plans so far");
      WARN(identical == static_cast<int>(std::size(rows)));
    }
}

}  // namespace
}  // namespace fp8rl::test
