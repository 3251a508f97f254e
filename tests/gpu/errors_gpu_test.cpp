// The CUDA backend's failures: bad shapes and layouts, impossible
// allocations, missing devices. Each throws fp8rl::Error with a status the C
// API can report, and leaves the backend usable.
#include <string>

#include "gpu/gpu_test_support.h"

namespace fp8rl::test {
namespace {

// A [8, 256] in 1x128 tiles and W [16, 256] in 128x128 blocks, on the GPU.
struct SmallOperands {
  Buffer a_codes{gpu(), 8 * 256}, a_scales{gpu(), 8 * 2 * sizeof(float)};
  Buffer w_codes{gpu(), 16 * 256}, w_scales{gpu(), 1 * 2 * sizeof(float)};
  Buffer c{gpu(), 8 * 16 * sizeof(float)};
  Fp8Matrix a{a_codes.as<uint8_t>(), a_scales.as<float>(), 8, 256, BlockLayout::tile_1x128, Fp8Format::e4m3};
  Fp8Matrix w{w_codes.as<uint8_t>(), w_scales.as<float>(), 16, 256, BlockLayout::block_128x128, Fp8Format::e4m3};
};

TEST_CASE("cuda gemm_fp8: bad operands throw invalid_argument") {
  SmallOperands ops;
  auto gemm_with = [&](Fp8Matrix a, Fp8Matrix w) {
    return thrown_status([&] { gpu().gemm_fp8(a, w, ops.c.as<void>(), DType::f32); });
  };
  Fp8Matrix bad = ops.w;
  bad.cols = 128;
  CHECK(gemm_with(ops.a, bad) == Status::invalid_argument);  // K differs
  bad = ops.a;
  bad.layout = BlockLayout::block_128x128;
  CHECK(gemm_with(bad, ops.w) == Status::invalid_argument);  // A must be in 1x128 tiles
  bad = ops.w;
  bad.layout = BlockLayout::tile_1x128_transposed;
  CHECK(gemm_with(ops.a, bad) == Status::invalid_argument);
  bad = ops.a;
  bad.format = Fp8Format::e5m2;
  CHECK(gemm_with(bad, ops.w) == Status::invalid_argument);  // E4M3 only
  bad = ops.a;
  bad.rows = -1;
  CHECK(gemm_with(bad, ops.w) == Status::invalid_argument);
  bad = ops.w;
  bad.scales = nullptr;
  CHECK(gemm_with(ops.a, bad) == Status::invalid_argument);
  CHECK(thrown_status([&] { gpu().gemm_fp8(ops.a, ops.w, nullptr, DType::f32); }) == Status::invalid_argument);
}

TEST_CASE("cuda gemm_bf16: bad shapes throw invalid_argument") {
  const Buffer a(gpu(), 64 * 2), w(gpu(), 64 * 2), c(gpu(), 64 * 4);
  auto gemm_with = [&](int64_t m, int64_t n, int64_t k) {
    return thrown_status(
        [&] { gpu().gemm_bf16(a.as<uint16_t>(), w.as<uint16_t>(), m, n, k, c.as<void>(), DType::f32); });
  };
  CHECK(gemm_with(4, 4, 0) == Status::invalid_argument);
  CHECK(gemm_with(-1, 4, 4) == Status::invalid_argument);
  CHECK(gemm_with(4, -1, 4) == Status::invalid_argument);
  CHECK(thrown_status([&] { gpu().gemm_bf16(nullptr, w.as<uint16_t>(), 4, 4, 4, c.as<void>(), DType::f32); }) ==
        Status::invalid_argument);
}

TEST_CASE("cuda quantize: bad shapes and pointers throw invalid_argument") {
  const Buffer input(gpu(), 64), codes(gpu(), 64), scales(gpu(), 64);
  CHECK(thrown_status([&] {
          gpu().quantize(input.as<void>(), DType::f32, -1, 4, QuantSpec{}, codes.as<uint8_t>(), scales.as<float>());
        }) == Status::invalid_argument);
  CHECK(thrown_status([&] {
          gpu().quantize(input.as<void>(), DType::f32, 4, 4, QuantSpec{}, nullptr, scales.as<float>());
        }) == Status::invalid_argument);
}

TEST_CASE("cuda backend: impossible allocations throw out_of_memory and leave the backend usable") {
  CHECK(thrown_status([] { gpu().allocate(size_t{1} << 52); }) == Status::out_of_memory);
  const Buffer small(gpu(), 1024);
  gpu().synchronize();
  CHECK(gpu().allocate(0) == nullptr);
}

TEST_CASE("cuda backend: devices that do not exist are backend_unavailable") {
  CHECK(thrown_status([] { make_cuda_backend(-1); }) == Status::backend_unavailable);
  CHECK(thrown_status([] { make_cuda_backend(cuda_device_count()); }) == Status::backend_unavailable);
}

TEST_CASE("cuda backend: description names the device") {
  const std::string description = gpu().description();
  MESSAGE(description);
  CHECK(gpu().kind() == BackendKind::cuda);
  CHECK(description.find("CUDA device 0") != std::string::npos);
}

}  // namespace
}  // namespace fp8rl::test
