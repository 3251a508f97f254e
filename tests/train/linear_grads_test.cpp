// The backward GEMMs of a linear layer: dgrad and wgrad in BF16 and FP8
// against float64 products of independently rounded or fake-quantized
// operands (tests/numerics' grid encoder, block scales amax / 448 computed
// here), with sizes that leave partial blocks and tiles everywhere.
#include "core/train/linear_grads.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "core/train/transposed_model.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/cpu/cpu_backend.h"
#include "numerics/fp8_reference.h"

namespace fp8rl::test {
namespace {

constexpr int64_t M = 200, K = 260, N = 150;  // tokens, in, out

std::vector<float> gaussians(size_t count, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

// A [rows, cols] accessor.
using Element = std::function<double(int64_t row, int64_t col)>;

// The values the GEMM sees of x [rows, cols] quantized in blocks of
// block_rows x block_cols: scale = amax / 448 in float (1 for an all-zero
// block), code = nearest E4M3 of the float quotient, value = code * scale.
// Materialized once: the product below reads every element many times.
std::shared_ptr<std::vector<double>> fake_quantize(const std::vector<float>& x, int64_t cols, int64_t block_rows,
                                                   int64_t block_cols) {
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  auto values = std::make_shared<std::vector<double>>(x.size());
  for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
    for (int64_t c0 = 0; c0 < cols; c0 += block_cols) {
      const int64_t r1 = std::min(rows, r0 + block_rows), c1 = std::min(cols, c0 + block_cols);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
      const float scale = amax == 0.0f ? 1.0f : amax / 448.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          const float quotient = x[r * cols + c] / scale;
          (*values)[r * cols + c] = ref_decode(ref_encode(quotient, Fp8Format::e4m3, true), Fp8Format::e4m3) * scale;
        }
    }
  }
  return values;
}

Element fake_quantized(const std::vector<float>& x, int64_t cols, int64_t block_rows, int64_t block_cols) {
  const std::shared_ptr<std::vector<double>> values = fake_quantize(x, cols, block_rows, block_cols);
  return [values, cols](int64_t r, int64_t c) { return (*values)[r * cols + c]; };
}

Element bf16_rounded(const std::vector<float>& x, int64_t cols) {
  return [&x, cols](int64_t r, int64_t c) { return static_cast<double>(bf16_decode(bf16_encode(x[r * cols + c]))); };
}

// C[i, j] = sum_t a(i, t) b(t, j) in float64, checked against got [rows, cols]
// within rtol of sum_t |a b| (FP32 accumulation of exactly representable products).
void check_product(const std::vector<float>& got, int64_t rows, int64_t cols, int64_t depth, const Element& a,
                   const Element& b, double rtol) {
  int64_t bad = 0;
  double worst = 0.0;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t t = 0; t < depth; ++t) {
        const double p = a(i, t) * b(t, j);
        sum += p;
        magnitude += std::fabs(p);
      }
      const double error = std::fabs(got[i * cols + j] - sum) / (magnitude + 1e-30);
      worst = std::max(worst, error);
      bad += error > rtol;
    }
  }
  MESSAGE("worst error relative to sum |a b|: " << worst);
  CHECK(bad == 0);
}

struct Setup {
  std::unique_ptr<Backend> backend = make_cpu_backend(2);
  std::vector<float> x = gaussians(M * K, 1, 1.0f), w = gaussians(N * K, 2, 0.05f), dy = gaussians(M * N, 3, 0.01f);
  model::HostTensor weight{{N, K}, w};

  std::vector<float> run_dgrad(bool fp8) {
    const policy::LinearWeights forward = policy::compile_linear(*backend, weight, {}, fp8 ? policy::LinearMath::fp8 : policy::LinearMath::bf16, ScaleFormat::fp32);
    policy::LinearWeights transposed = train::allocate_transposed(*backend, forward);
    train::transpose_linear(*backend, forward, transposed);
    DeviceArray<float> dy_device(*backend, dy.size()), dx(*backend, static_cast<size_t>(M * K));
    dy_device.upload(dy.data(), dy.size());
    train::LinearGradScratch scratch;
    train::linear_dgrad(*backend, transposed, ScaleFormat::fp32, dy_device.data(), M, dx.data(), scratch);
    std::vector<float> out(static_cast<size_t>(M * K));
    dx.download(out.data(), out.size());
    return out;
  }

  std::vector<float> run_wgrad(bool fp8) {
    DeviceArray<float> dy_device(*backend, dy.size()), x_device(*backend, x.size()), dw(*backend, w.size());
    dy_device.upload(dy.data(), dy.size());
    x_device.upload(x.data(), x.size());
    train::LinearGradScratch scratch;
    train::linear_wgrad(*backend, fp8, ScaleFormat::fp32, dy_device.data(), x_device.data(), M, N, K, dw.data(),
                        scratch);
    std::vector<float> out(w.size());
    dw.download(out.data(), out.size());
    return out;
  }
};

}  // namespace

TEST_CASE("linear dgrad: dx = dy . W, in BF16 and in FP8 (dy in 1x128 tiles, W^T in 128x128 blocks)") {
  Setup s;
  const Element dy_bf16 = bf16_rounded(s.dy, N), w_bf16 = bf16_rounded(s.w, K);
  check_product(s.run_dgrad(false), M, K, N, dy_bf16, w_bf16, 1e-5);
  // W^T [K, N] in 128x128 blocks: element (t = n, j = k) of the product's right operand is W[n, k].
  std::vector<float> w_transposed(s.w.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) w_transposed[k * N + n] = s.w[n * K + k];
  const Element wt = fake_quantized(w_transposed, N, 128, 128);
  check_product(
      s.run_dgrad(true), M, K, N, fake_quantized(s.dy, N, 1, 128), [&wt](int64_t n, int64_t k) { return wt(k, n); },
      1e-5);
}

TEST_CASE("linear wgrad: dW = dy^T . x, in BF16 and in FP8 (dy and x in 1x128 tiles along the tokens)") {
  Setup s;
  const Element dy_bf16 = bf16_rounded(s.dy, N), x_bf16 = bf16_rounded(s.x, K);
  check_product(
      s.run_wgrad(false), N, K, M, [&](int64_t n, int64_t m) { return dy_bf16(m, n); }, x_bf16, 1e-5);
  const Element dy_tiles = fake_quantized(s.dy, N, 128, 1), x_tiles = fake_quantized(s.x, K, 128, 1);
  check_product(
      s.run_wgrad(true), N, K, M, [&](int64_t n, int64_t m) { return dy_tiles(m, n); }, x_tiles, 1e-5);
}

TEST_CASE("linear grads: FP8 stays within E4M3's precision of the exact float64 gradients") {
  Setup s;
  auto exact = [](const std::vector<float>& v, int64_t cols) {
    return [&v, cols](int64_t r, int64_t c) { return static_cast<double>(v[r * cols + c]); };
  };
  // Each operand carries at most 2^-4 relative rounding (plus subnormal flushes of tiny values).
  check_product(s.run_dgrad(true), M, K, N, exact(s.dy, N), exact(s.w, K), 0.15);
  check_product(
      s.run_wgrad(true), N, K, M, [&](int64_t n, int64_t m) { return static_cast<double>(s.dy[m * N + n]); },
      exact(s.x, K), 0.15);
}

}  // namespace fp8rl::test

namespace fp8rl::test {

TEST_CASE("transposing a compiled FP8 weight gives the blocks quantizing W^T gives, bit for bit") {
  for (ScaleFormat format : {ScaleFormat::fp32, ScaleFormat::pow2}) {
    std::unique_ptr<Backend> backend = make_cpu_backend(2);
    const int64_t out = 300, in = 170;  // partial blocks on both edges
    model::HostTensor weight{{out, in}, gaussians(out * in, 9, 0.3f)};
    model::HostTensor transposed_host{{in, out}, std::vector<float>(weight.data.size())};
    for (int64_t r = 0; r < out; ++r)
      for (int64_t c = 0; c < in; ++c)
        transposed_host.data[static_cast<size_t>(c * out + r)] = weight.data[static_cast<size_t>(r * in + c)];
    const policy::LinearWeights expected = policy::compile_linear(*backend, transposed_host, {}, policy::LinearMath::fp8, format);
    const policy::LinearWeights forward = policy::compile_linear(*backend, weight, {}, policy::LinearMath::fp8, format);
    policy::LinearWeights got = train::allocate_transposed(*backend, forward);
    train::transpose_linear(*backend, forward, got);
    std::vector<uint8_t> a(expected.codes.size()), b(got.codes.size());
    expected.codes.download(a.data(), a.size());
    got.codes.download(b.data(), b.size());
    CHECK(a == b);
    std::vector<float> sa(expected.scales.size()), sb(got.scales.size());
    expected.scales.download(sa.data(), sa.size());
    got.scales.download(sb.data(), sb.size());
    CHECK(std::memcmp(sa.data(), sb.data(), sa.size() * sizeof(float)) == 0);
    CHECK(got.out_features == in);
    CHECK(got.in_features == out);
  }
}

}  // namespace fp8rl::test
