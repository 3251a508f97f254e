// The CPU backend outside the GEMMs: memory, quantize/dequantize threading,
// argument checks, and the SIMD level it reports.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <string>

#include "cpu/gemm_reference.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/common/block_scale.h"
#include "kernels/cpu/cpu_backend.h"

namespace fp8rl::test {
namespace {

void check_status(const std::function<void()>& call, Status status) {
  try {
    call();
    FAIL("no exception");
  } catch (const Error& error) {
    CHECK(error.status() == status);
  }
}

TEST_CASE("describes itself with its SIMD level and thread count") {
  const std::unique_ptr<Backend> backend = make_cpu_backend(2);
  CHECK(backend->kind() == BackendKind::cpu);
  CHECK(backend->description() == std::string("CPU (") + simd_level_name(detect_simd_level()) + ", 2 threads)");
  CHECK(make_cpu_backend(1, SimdLevel::portable)->description() == "CPU (portable, 1 thread)");
}

TEST_CASE("a requested SIMD level is clamped to what the CPU supports") {
  const std::string best = simd_level_name(detect_simd_level());
  CHECK(make_cpu_backend(1, SimdLevel::avx512_bf16)->description() == "CPU (" + best + ", 1 thread)");
}

TEST_CASE("allocate gives aligned memory that upload and download fill") {
  const std::unique_ptr<Backend> backend = make_cpu_backend(1);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, size_t{1} << 20}) {
    void* p = backend->allocate(bytes);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    std::vector<uint8_t> in(bytes), out(bytes);
    for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<uint8_t>(i * 7);
    backend->upload(p, in.data(), bytes);
    backend->synchronize();
    backend->download(out.data(), p, bytes);
    CHECK(in == out);
    backend->deallocate(p);
  }
  backend->deallocate(nullptr);
  check_status([&] { backend->allocate(static_cast<size_t>(-1) / 2); }, Status::out_of_memory);
  check_status([&] { backend->upload(nullptr, &backend, 4); }, Status::invalid_argument);
}

TEST_CASE("quantize with many threads gives the single-threaded bits") {
  const int64_t rows = 300, cols = 260;
  std::mt19937 rng(51);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> input(static_cast<size_t>(rows * cols));
  for (float& x : input) x = normal(rng);
  std::vector<uint16_t> input16(input.size());
  for (size_t i = 0; i < input.size(); ++i) input16[i] = bf16_encode(input[i]);
  const std::unique_ptr<Backend> one = make_cpu_backend(1), many = make_cpu_backend(3);
  for (BlockLayout layout : {BlockLayout::tile_1x128, BlockLayout::tile_1x128_transposed, BlockLayout::block_128x128})
    for (DType dtype : {DType::f32, DType::bf16}) {
      CAPTURE(static_cast<int>(layout));
      CAPTURE(static_cast<int>(dtype));
      QuantSpec spec;
      spec.layout = layout;
      const size_t scale_count = static_cast<size_t>(scale_shape(layout, rows, cols).count());
      std::vector<uint8_t> codes1(input.size()), codes3(input.size());
      std::vector<float> scales1(scale_count), scales3(scale_count);
      const void* data = dtype == DType::f32 ? static_cast<const void*>(input.data()) : input16.data();
      one->quantize(data, dtype, rows, cols, spec, codes1.data(), scales1.data());
      many->quantize(data, dtype, rows, cols, spec, codes3.data(), scales3.data());
      CHECK(codes1 == codes3);
      CHECK(first_bit_difference(scales1, scales3) == -1);

      std::vector<float> back1(input.size()), back3(input.size());
      const Fp8Matrix matrix{codes1.data(), scales1.data(), rows, cols, layout, Fp8Format::e4m3};
      one->dequantize(matrix, back1.data());
      many->dequantize(matrix, back3.data());
      CHECK(first_bit_difference(back1, back3) == -1);
      for (size_t i = 0; i < input.size(); i += 97)  // and it is a dequantization
        CHECK(std::fabs(back1[i] - input[i]) <= 0.07f * std::fabs(input[i]) + 1e-3f);
    }
}

TEST_CASE("quantize and dequantize reject bad arguments") {
  const std::unique_ptr<Backend> backend = make_cpu_backend(2);
  std::vector<float> input(256, 1.0f), scales(4), output(256);
  std::vector<uint8_t> codes(256);
  const QuantSpec spec;
  auto quantize = [&](const void* in, DType dtype, int64_t rows, int64_t cols, QuantSpec s, uint8_t* c, float* sc) {
    return [=, &backend] { backend->quantize(in, dtype, rows, cols, s, c, sc); };
  };
  check_status(quantize(nullptr, DType::f32, 2, 128, spec, codes.data(), scales.data()), Status::invalid_argument);
  check_status(quantize(input.data(), DType::f32, 2, 128, spec, nullptr, scales.data()), Status::invalid_argument);
  check_status(quantize(input.data(), DType::f32, 2, 128, spec, codes.data(), nullptr), Status::invalid_argument);
  check_status(quantize(input.data(), DType::f32, 0, 128, spec, codes.data(), scales.data()), Status::invalid_argument);
  check_status(quantize(input.data(), DType::f32, 2, -1, spec, codes.data(), scales.data()), Status::invalid_argument);
  check_status(quantize(input.data(), static_cast<DType>(3), 2, 128, spec, codes.data(), scales.data()),
               Status::invalid_argument);
  QuantSpec bad_layout;
  bad_layout.layout = static_cast<BlockLayout>(9);
  check_status(quantize(input.data(), DType::f32, 2, 128, bad_layout, codes.data(), scales.data()),
               Status::invalid_argument);

  const Fp8Matrix good{codes.data(), scales.data(), 2, 128, BlockLayout::tile_1x128, Fp8Format::e4m3};
  Fp8Matrix bad = good;
  bad.codes = nullptr;
  check_status([&] { backend->dequantize(bad, output.data()); }, Status::invalid_argument);
  bad = good;
  bad.rows = 0;
  check_status([&] { backend->dequantize(bad, output.data()); }, Status::invalid_argument);
  check_status([&] { backend->dequantize(good, nullptr); }, Status::invalid_argument);
}

TEST_CASE("SIMD level names") {
  CHECK(std::string(simd_level_name(SimdLevel::portable)) == "portable");
  CHECK(std::string(simd_level_name(SimdLevel::avx2)) == "AVX2");
  CHECK(std::string(simd_level_name(SimdLevel::avx512)) == "AVX-512");
  CHECK(std::string(simd_level_name(SimdLevel::avx512_bf16)) == "AVX-512 BF16");
}

}  // namespace
}  // namespace fp8rl::test
