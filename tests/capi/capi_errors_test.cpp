// The C API's error model: every function given NULL, bad sizes, bad enums or
// non-finite data returns an error status and a message naming the problem,
// and the context keeps working afterwards. Uses only the public header.
#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "capi/capi_fixture.h"

namespace {

// Asserts `status` is `expected` and the thread's message mentions `needle`.
void check_error(fp8rl_status status, fp8rl_status expected, const char* needle) {
  CHECK_MESSAGE(status == expected, "got " << fp8rl_status_name(status) << ": " << fp8rl_last_error_message());
  const std::string message = fp8rl_last_error_message();
  CHECK_MESSAGE(message.find(needle) != std::string::npos, "message '" << message << "' lacks '" << needle << "'");
}

}  // namespace

TEST_CASE("status names cover every code and unknown values") {
  CHECK(std::string(fp8rl_status_name(FP8RL_OK)) == "FP8RL_OK");
  CHECK(std::string(fp8rl_status_name(FP8RL_ERROR_NON_FINITE)) == "FP8RL_ERROR_NON_FINITE");
  CHECK(std::string(fp8rl_status_name(FP8RL_ERROR_INTERNAL)) == "FP8RL_ERROR_INTERNAL");
  CHECK(std::string(fp8rl_status_name(static_cast<fp8rl_status>(999))) == "FP8RL_STATUS_UNKNOWN");
}

TEST_CASE("context functions reject NULL and bad options") {
  fp8rl_context_options options;
  check_error(fp8rl_context_options_init(nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "options is NULL");
  REQUIRE(fp8rl_context_options_init(&options) == FP8RL_OK);
  fp8rl_context* context = nullptr;
  check_error(fp8rl_context_create(nullptr, &context), FP8RL_ERROR_INVALID_ARGUMENT, "options is NULL");
  check_error(fp8rl_context_create(&options, nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_context is NULL");

  fp8rl_context_options bad = options;
  bad.struct_size = 0;
  check_error(fp8rl_context_create(&bad, &context), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");
  bad.struct_size = sizeof(options) + 8;
  check_error(fp8rl_context_create(&bad, &context), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");
  bad = options;
  bad.backend = static_cast<fp8rl_backend>(7);
  check_error(fp8rl_context_create(&bad, &context), FP8RL_ERROR_INVALID_ARGUMENT, "backend");
  bad = options;
  bad.num_threads = -3;
  check_error(fp8rl_context_create(&bad, &context), FP8RL_ERROR_INVALID_ARGUMENT, "num_threads");
  bad = options;
  bad.log_level = static_cast<fp8rl_log_level>(12);
  check_error(fp8rl_context_create(&bad, &context), FP8RL_ERROR_INVALID_ARGUMENT, "log_level");
  bad = options;
  bad.cuda_device = -1;
  check_error(fp8rl_context_create(&bad, &context), FP8RL_ERROR_INVALID_ARGUMENT, "cuda_device");
  CHECK(context == nullptr);

  fp8rl_backend backend;
  int32_t threads;
  const char* description;
  check_error(fp8rl_context_get_backend(nullptr, &backend), FP8RL_ERROR_INVALID_ARGUMENT, "context is NULL");
  check_error(fp8rl_context_get_num_threads(nullptr, &threads), FP8RL_ERROR_INVALID_ARGUMENT, "context is NULL");
  check_error(fp8rl_context_get_description(nullptr, &description), FP8RL_ERROR_INVALID_ARGUMENT, "context is NULL");
  check_error(fp8rl_build_features(nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_features is NULL");
  CHECK(fp8rl_context_destroy(nullptr) == FP8RL_OK);

  CpuContext cpu;
  check_error(fp8rl_context_get_backend(cpu.get(), nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_backend is NULL");
  check_error(fp8rl_context_get_num_threads(cpu.get(), nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_num_threads");
  check_error(fp8rl_context_get_description(cpu.get(), nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_description");
}

TEST_CASE("fp8rl_convert rejects NULL, unknown dtypes and unsupported pairs") {
  float f = 1.0f;
  uint8_t code = 0;
  check_error(fp8rl_convert(nullptr, FP8RL_DTYPE_F32, &code, FP8RL_DTYPE_E4M3, 1, 1), FP8RL_ERROR_INVALID_ARGUMENT,
              "src is NULL");
  check_error(fp8rl_convert(&f, FP8RL_DTYPE_F32, nullptr, FP8RL_DTYPE_E4M3, 1, 1), FP8RL_ERROR_INVALID_ARGUMENT,
              "dst is NULL");
  check_error(fp8rl_convert(&f, static_cast<fp8rl_dtype>(9), &code, FP8RL_DTYPE_E4M3, 1, 1),
              FP8RL_ERROR_INVALID_ARGUMENT, "src_dtype");
  check_error(fp8rl_convert(&code, FP8RL_DTYPE_E4M3, &code, FP8RL_DTYPE_E5M2, 1, 1), FP8RL_ERROR_UNSUPPORTED,
              "not supported");
}

TEST_CASE("fp8rl_quantized_sizes and fp8rl_quantize reject bad arguments") {
  CpuContext cpu;
  fp8rl_quantize_options options;
  check_error(fp8rl_quantize_options_init(nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "options is NULL");
  REQUIRE(fp8rl_quantize_options_init(&options) == FP8RL_OK);
  int64_t codes_n = 0, scales_n = 0;
  check_error(fp8rl_quantized_sizes(nullptr, 4, 4, &codes_n, &scales_n), FP8RL_ERROR_INVALID_ARGUMENT, "options");
  check_error(fp8rl_quantized_sizes(&options, 0, 4, &codes_n, &scales_n), FP8RL_ERROR_INVALID_ARGUMENT, "positive");
  check_error(fp8rl_quantized_sizes(&options, -2, 4, &codes_n, &scales_n), FP8RL_ERROR_INVALID_ARGUMENT, "positive");
  check_error(fp8rl_quantized_sizes(&options, int64_t{1} << 40, int64_t{1} << 40, &codes_n, &scales_n),
              FP8RL_ERROR_INVALID_ARGUMENT, "too many");
  check_error(fp8rl_quantized_sizes(&options, 4, 4, nullptr, &scales_n), FP8RL_ERROR_INVALID_ARGUMENT,
              "out_code_count");
  check_error(fp8rl_quantized_sizes(&options, 4, 4, &codes_n, nullptr), FP8RL_ERROR_INVALID_ARGUMENT,
              "out_scale_count");

  const int64_t rows = 3, cols = 130;  // two 1x128 tiles per row, the second partial
  std::vector<float> input(rows * cols, 1.5f);
  std::vector<uint8_t> codes(rows * cols);
  std::vector<float> scales(rows * 2);
  auto quantize = [&](const fp8rl_quantize_options* o, const void* in, fp8rl_dtype dtype, int64_t r, int64_t c,
                      uint8_t* q, int64_t qn, float* s,
                      int64_t sn) { return fp8rl_quantize(cpu.get(), o, in, dtype, r, c, q, qn, s, sn); };
  const int64_t nc = rows * cols, ns = rows * 2;
  check_error(
      fp8rl_quantize(nullptr, &options, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
      FP8RL_ERROR_INVALID_ARGUMENT, "context is NULL");
  check_error(quantize(nullptr, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "options is NULL");
  check_error(quantize(&options, nullptr, FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "input is NULL");
  check_error(quantize(&options, input.data(), FP8RL_DTYPE_F32, rows, cols, nullptr, nc, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "codes is NULL");
  check_error(quantize(&options, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, nullptr, ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "scales is NULL");
  check_error(quantize(&options, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc - 1, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "code_count");
  check_error(quantize(&options, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns + 1),
              FP8RL_ERROR_INVALID_ARGUMENT, "scale_count");
  check_error(quantize(&options, input.data(), FP8RL_DTYPE_E4M3, rows, cols, codes.data(), nc, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "input_dtype");
  check_error(quantize(&options, input.data(), FP8RL_DTYPE_F32, 0, cols, codes.data(), nc, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "positive");

  fp8rl_quantize_options bad = options;
  bad.layout = static_cast<fp8rl_block_layout>(5);
  check_error(quantize(&bad, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "layout");
  bad = options;
  bad.format = FP8RL_DTYPE_BF16;
  check_error(quantize(&bad, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "format");
  bad = options;
  bad.scale_format = static_cast<fp8rl_scale_format>(3);
  check_error(quantize(&bad, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
              FP8RL_ERROR_INVALID_ARGUMENT, "scale_format");
  bad = options;
  bad.struct_size = 2;
  check_error(quantize(&bad, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
              FP8RL_ERROR_VERSION_MISMATCH, "struct_size");

  SUBCASE("NaN and Inf input are rejected unless allowed, and nothing is written") {
    input[200] = std::numeric_limits<float>::quiet_NaN();
    std::fill(codes.begin(), codes.end(), uint8_t{0xAB});
    check_error(quantize(&options, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
                FP8RL_ERROR_NON_FINITE, "input[200]");
    CHECK(codes[0] == 0xAB);
    input[200] = 1.5f;
    input[7] = -std::numeric_limits<float>::infinity();
    check_error(quantize(&options, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns),
                FP8RL_ERROR_NON_FINITE, "input[7]");
    options.allow_non_finite = 1;
    CHECK(quantize(&options, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), nc, scales.data(), ns) ==
          FP8RL_OK);
    CHECK(codes[7] == 0xFE);  // -Inf saturates to -448
  }
}

TEST_CASE("fp8rl_dequantize rejects bad arguments, NaN codes and bad scales") {
  CpuContext cpu;
  fp8rl_quantize_options options;
  REQUIRE(fp8rl_quantize_options_init(&options) == FP8RL_OK);
  std::vector<uint8_t> codes(4 * 8, 0x38);  // 1.0 in E4M3
  std::vector<float> scales(4, 0.5f);
  std::vector<float> out(4 * 8);
  auto dequantize = [&](const uint8_t* q, int64_t qn, const float* s, int64_t sn, float* o, int64_t on) {
    return fp8rl_dequantize(cpu.get(), &options, q, qn, s, sn, 4, 8, o, on);
  };
  check_error(dequantize(nullptr, 32, scales.data(), 4, out.data(), 32), FP8RL_ERROR_INVALID_ARGUMENT, "codes is NULL");
  check_error(dequantize(codes.data(), 32, nullptr, 4, out.data(), 32), FP8RL_ERROR_INVALID_ARGUMENT, "scales is NULL");
  check_error(dequantize(codes.data(), 32, scales.data(), 4, nullptr, 32), FP8RL_ERROR_INVALID_ARGUMENT,
              "output is NULL");
  check_error(dequantize(codes.data(), 31, scales.data(), 4, out.data(), 32), FP8RL_ERROR_INVALID_ARGUMENT,
              "code_count");
  check_error(dequantize(codes.data(), 32, scales.data(), 3, out.data(), 32), FP8RL_ERROR_INVALID_ARGUMENT,
              "scale_count");
  check_error(dequantize(codes.data(), 32, scales.data(), 4, out.data(), 33), FP8RL_ERROR_INVALID_ARGUMENT,
              "output_count");
  codes[9] = 0x7F;
  check_error(dequantize(codes.data(), 32, scales.data(), 4, out.data(), 32), FP8RL_ERROR_NON_FINITE, "codes[9]");
  codes[9] = 0x38;
  scales[2] = 0.0f;
  check_error(dequantize(codes.data(), 32, scales.data(), 4, out.data(), 32), FP8RL_ERROR_NON_FINITE, "scales[2]");
  scales[2] = std::numeric_limits<float>::infinity();
  check_error(dequantize(codes.data(), 32, scales.data(), 4, out.data(), 32), FP8RL_ERROR_NON_FINITE, "scales[2]");
  scales[2] = 0.5f;
  REQUIRE(dequantize(codes.data(), 32, scales.data(), 4, out.data(), 32) == FP8RL_OK);
  for (float v : out) CHECK(v == 0.5f);
}

TEST_CASE("GEMM functions reject bad operands") {
  CpuContext cpu;
  const uint8_t one = 0x38;
  const float scale = 1.0f;
  fp8rl_fp8_matrix a{&one, 1, &scale, 1, 1, 1, FP8RL_LAYOUT_TILE_1X128};
  fp8rl_fp8_matrix w{&one, 1, &scale, 1, 1, 1, FP8RL_LAYOUT_BLOCK_128X128};
  float c = 0.0f;
  check_error(fp8rl_gemm_fp8(nullptr, &a, &w, &c, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_INVALID_ARGUMENT, "context");
  check_error(fp8rl_gemm_fp8(cpu.get(), nullptr, &w, &c, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_INVALID_ARGUMENT,
              "a is NULL");
  check_error(fp8rl_gemm_fp8(cpu.get(), &a, nullptr, &c, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_INVALID_ARGUMENT,
              "w is NULL");
  check_error(fp8rl_gemm_fp8(cpu.get(), &a, &w, nullptr, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_INVALID_ARGUMENT,
              "c is NULL");
  check_error(fp8rl_gemm_fp8(cpu.get(), &a, &w, &c, FP8RL_DTYPE_F32, 2), FP8RL_ERROR_INVALID_ARGUMENT, "c_count");
  check_error(fp8rl_gemm_fp8(cpu.get(), &a, &w, &c, FP8RL_DTYPE_E5M2, 1), FP8RL_ERROR_INVALID_ARGUMENT, "c_dtype");
  fp8rl_fp8_matrix bad = a;
  bad.layout = FP8RL_LAYOUT_BLOCK_128X128;
  check_error(fp8rl_gemm_fp8(cpu.get(), &bad, &w, &c, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_INVALID_ARGUMENT, "a->layout");
  bad = w;
  bad.layout = FP8RL_LAYOUT_TILE_1X128_TRANSPOSED;
  check_error(fp8rl_gemm_fp8(cpu.get(), &a, &bad, &c, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_INVALID_ARGUMENT, "w->layout");
  bad = w;
  bad.cols = 2;
  bad.code_count = 2;
  const uint8_t two_codes[2] = {0x38, 0x38};
  bad.codes = two_codes;
  check_error(fp8rl_gemm_fp8(cpu.get(), &a, &bad, &c, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_INVALID_ARGUMENT, "K");
  bad = w;
  bad.scale_count = 0;
  check_error(fp8rl_gemm_fp8(cpu.get(), &a, &bad, &c, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_INVALID_ARGUMENT,
              "w.scale_count");
  const uint8_t nan_code = 0xFF;
  bad = a;
  bad.codes = &nan_code;
  check_error(fp8rl_gemm_fp8(cpu.get(), &bad, &w, &c, FP8RL_DTYPE_F32, 1), FP8RL_ERROR_NON_FINITE, "a.codes[0]");

  const uint16_t bf16_one = 0x3F80, bf16_nan = 0x7FC0;
  check_error(fp8rl_gemm_bf16(nullptr, &bf16_one, 1, &bf16_one, 1, 1, 1, 1, &c, FP8RL_DTYPE_F32, 1),
              FP8RL_ERROR_INVALID_ARGUMENT, "context");
  check_error(fp8rl_gemm_bf16(cpu.get(), nullptr, 1, &bf16_one, 1, 1, 1, 1, &c, FP8RL_DTYPE_F32, 1),
              FP8RL_ERROR_INVALID_ARGUMENT, "a is NULL");
  check_error(fp8rl_gemm_bf16(cpu.get(), &bf16_one, 1, nullptr, 1, 1, 1, 1, &c, FP8RL_DTYPE_F32, 1),
              FP8RL_ERROR_INVALID_ARGUMENT, "w is NULL");
  check_error(fp8rl_gemm_bf16(cpu.get(), &bf16_one, 1, &bf16_one, 1, 1, 1, 1, nullptr, FP8RL_DTYPE_F32, 1),
              FP8RL_ERROR_INVALID_ARGUMENT, "c is NULL");
  check_error(fp8rl_gemm_bf16(cpu.get(), &bf16_one, 2, &bf16_one, 1, 1, 1, 1, &c, FP8RL_DTYPE_F32, 1),
              FP8RL_ERROR_INVALID_ARGUMENT, "a_count");
  check_error(fp8rl_gemm_bf16(cpu.get(), &bf16_one, 1, &bf16_one, 1, 1, 1, 0, &c, FP8RL_DTYPE_F32, 1),
              FP8RL_ERROR_INVALID_ARGUMENT, "positive");
  check_error(fp8rl_gemm_bf16(cpu.get(), &bf16_nan, 1, &bf16_one, 1, 1, 1, 1, &c, FP8RL_DTYPE_F32, 1),
              FP8RL_ERROR_NON_FINITE, "a[0]");

  // The context still works after all those failures.
  REQUIRE(fp8rl_gemm_fp8(cpu.get(), &a, &w, &c, FP8RL_DTYPE_F32, 1) == FP8RL_OK);
  CHECK(c == 1.0f);
}

TEST_CASE("error messages are per thread") {
  CHECK(fp8rl_context_options_init(nullptr) == FP8RL_ERROR_INVALID_ARGUMENT);
  const std::string mine = fp8rl_last_error_message();
  std::string theirs_before, theirs_after;
  std::thread other([&] {
    theirs_before = fp8rl_last_error_message();
    float f = 0;
    fp8rl_convert(&f, FP8RL_DTYPE_F32, nullptr, FP8RL_DTYPE_BF16, 1, 1);
    theirs_after = fp8rl_last_error_message();
  });
  other.join();
  CHECK(theirs_before.empty());
  CHECK(theirs_after.find("dst is NULL") != std::string::npos);
  CHECK(std::string(fp8rl_last_error_message()) == mine);
}
