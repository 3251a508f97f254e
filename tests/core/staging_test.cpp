// The core's host operations on a device backend: every host array is staged
// through device memory, results come back equal to the CPU path, and no
// device allocation outlives a call, failed or not.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/host_ops.h"
#include "kernels/common/bf16_codec.h"
#include "tests/core/fake_device_backend.h"

namespace {

using namespace fp8rl;

struct Contexts {
  test::FakeDeviceBackend* device = nullptr;
  Context staged;
  Context direct;

  Contexts() : staged(make_device(&device), Logger(), 2), direct(BackendRequest{BackendChoice::cpu, 2, 0}, Logger()) {}

  static std::unique_ptr<Backend> make_device(test::FakeDeviceBackend** out) {
    auto backend = std::make_unique<test::FakeDeviceBackend>();
    *out = backend.get();
    return backend;
  }
};

std::vector<float> wave(int64_t count, float frequency) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = std::sin(frequency * static_cast<float>(i)) * 5.0f;
  return values;
}

struct Quantized {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  HostFp8Matrix view(int64_t rows, int64_t cols, BlockLayout layout) const {
    return HostFp8Matrix{codes.data(),  static_cast<int64_t>(codes.size()),
                         scales.data(), static_cast<int64_t>(scales.size()),
                         rows,          cols,
                         layout,        Fp8Format::e4m3};
  }
};

Quantized quantize(Context& context, const std::vector<float>& x, int64_t rows, int64_t cols, BlockLayout layout) {
  QuantizeRequest request;
  request.spec.layout = layout;
  Quantized q{std::vector<uint8_t>(rows * cols), std::vector<float>(scale_shape(layout, rows, cols).count())};
  quantize_host(context, request, x.data(), DType::f32, rows, cols, q.codes.data(), rows * cols, q.scales.data(),
                static_cast<int64_t>(q.scales.size()));
  return q;
}

}  // namespace

TEST_CASE("core: staged quantize, dequantize and GEMMs equal the direct CPU path and free their device memory") {
  Contexts contexts;
  const int64_t m = 9, n = 140, k = 200;
  const auto a = wave(m * k, 0.13f), w = wave(n * k, 0.07f);
  for (BlockLayout layout : {BlockLayout::tile_1x128, BlockLayout::tile_1x128_transposed, BlockLayout::block_128x128}) {
    const Quantized staged = quantize(contexts.staged, w, n, k, layout);
    const Quantized direct = quantize(contexts.direct, w, n, k, layout);
    CHECK(staged.codes == direct.codes);
    CHECK(staged.scales == direct.scales);
    std::vector<float> back_staged(n * k), back_direct(n * k);
    dequantize_host(contexts.staged, staged.view(n, k, layout), back_staged.data(), n * k);
    dequantize_host(contexts.direct, direct.view(n, k, layout), back_direct.data(), n * k);
    CHECK(back_staged == back_direct);
  }
  const Quantized qa = quantize(contexts.direct, a, m, k, BlockLayout::tile_1x128);
  const Quantized qw = quantize(contexts.direct, w, n, k, BlockLayout::block_128x128);
  std::vector<float> c_staged(m * n), c_direct(m * n);
  gemm_fp8_host(contexts.staged, qa.view(m, k, BlockLayout::tile_1x128), qw.view(n, k, BlockLayout::block_128x128),
                c_staged.data(), DType::f32, m * n);
  gemm_fp8_host(contexts.direct, qa.view(m, k, BlockLayout::tile_1x128), qw.view(n, k, BlockLayout::block_128x128),
                c_direct.data(), DType::f32, m * n);
  CHECK(c_staged == c_direct);

  std::vector<uint16_t> a16(m * k), w16(n * k);
  for (size_t i = 0; i < a16.size(); ++i) a16[i] = bf16_encode(a[i]);
  for (size_t i = 0; i < w16.size(); ++i) w16[i] = bf16_encode(w[i]);
  gemm_bf16_host(contexts.staged, a16.data(), m * k, w16.data(), n * k, m, n, k, c_staged.data(), DType::f32, m * n);
  gemm_bf16_host(contexts.direct, a16.data(), m * k, w16.data(), n * k, m, n, k, c_direct.data(), DType::f32, m * n);
  CHECK(c_staged == c_direct);
  CHECK(contexts.device->live_allocations() == 0);
}

TEST_CASE("core: a failing device operation frees its staging and leaves the host output untouched") {
  Contexts contexts;
  const int64_t m = 2, n = 3, k = 128;
  const auto a = wave(m * k, 0.3f), w = wave(n * k, 0.2f);
  const Quantized qa = quantize(contexts.direct, a, m, k, BlockLayout::tile_1x128);
  const Quantized qw = quantize(contexts.direct, w, n, k, BlockLayout::block_128x128);
  std::vector<float> c(m * n, -7.0f);
  contexts.device->fail_gemm = true;
  CHECK_THROWS_AS(gemm_fp8_host(contexts.staged, qa.view(m, k, BlockLayout::tile_1x128),
                                qw.view(n, k, BlockLayout::block_128x128), c.data(), DType::f32, m * n),
                  Error);
  CHECK(contexts.device->live_allocations() == 0);
  for (float v : c) CHECK(v == -7.0f);
  contexts.device->fail_gemm = false;
  gemm_fp8_host(contexts.staged, qa.view(m, k, BlockLayout::tile_1x128), qw.view(n, k, BlockLayout::block_128x128),
                c.data(), DType::f32, m * n);
  CHECK(c[0] != -7.0f);
}
