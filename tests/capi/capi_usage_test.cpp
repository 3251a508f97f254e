// The C API used as documented: versions, contexts, logging, options from an
// older header, conversions and small GEMMs whose results are known by hand.
#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "capi/capi_fixture.h"

TEST_CASE("the loaded library reports the header's version") {
  CHECK(fp8rl_version() == FP8RL_VERSION);
  const std::string expected = std::to_string(FP8RL_VERSION_MAJOR) + "." + std::to_string(FP8RL_VERSION_MINOR) + "." +
                               std::to_string(FP8RL_VERSION_PATCH);
  CHECK(std::string(fp8rl_version_string()) == expected);
}

TEST_CASE("a CPU context reports its backend, threads and description") {
  CpuContext cpu(3);
  fp8rl_backend backend = FP8RL_BACKEND_AUTO;
  int32_t threads = 0;
  const char* description = nullptr;
  REQUIRE(fp8rl_context_get_backend(cpu.get(), &backend) == FP8RL_OK);
  REQUIRE(fp8rl_context_get_num_threads(cpu.get(), &threads) == FP8RL_OK);
  REQUIRE(fp8rl_context_get_description(cpu.get(), &description) == FP8RL_OK);
  CHECK(backend == FP8RL_BACKEND_CPU);
  CHECK(threads == 3);
  CHECK(std::string(description).find("CPU") != std::string::npos);
}

TEST_CASE("AUTO falls back to the CPU without a device, CUDA is either usable or reported unavailable") {
  fp8rl_context_options options;
  REQUIRE(fp8rl_context_options_init(&options) == FP8RL_OK);
  fp8rl_context* context = nullptr;
  REQUIRE(fp8rl_context_create(&options, &context) == FP8RL_OK);
  fp8rl_backend automatic = FP8RL_BACKEND_AUTO;
  REQUIRE(fp8rl_context_get_backend(context, &automatic) == FP8RL_OK);
  CHECK((automatic == FP8RL_BACKEND_CPU || automatic == FP8RL_BACKEND_CUDA));
  fp8rl_context_destroy(context);

  options.backend = FP8RL_BACKEND_CUDA;
  context = nullptr;
  const fp8rl_status status = fp8rl_context_create(&options, &context);
  if (automatic == FP8RL_BACKEND_CPU) {
    CHECK(status == FP8RL_ERROR_BACKEND_UNAVAILABLE);
    CHECK(std::string(fp8rl_last_error_message()).find("CUDA") != std::string::npos);
    CHECK(context == nullptr);
  } else {
    CHECK(status == FP8RL_OK);
  }
  fp8rl_context_destroy(context);
}

namespace {

struct LogRecord {
  std::vector<std::string> messages;
  std::vector<fp8rl_log_level> levels;
};

void record_log(fp8rl_log_level level, const char* message, void* user_data) {
  auto* record = static_cast<LogRecord*>(user_data);
  record->levels.push_back(level);
  record->messages.emplace_back(message);
}

}  // namespace

TEST_CASE("the log callback receives messages at or above its level, with its user data") {
  fp8rl_context_options options;
  REQUIRE(fp8rl_context_options_init(&options) == FP8RL_OK);
  options.backend = FP8RL_BACKEND_CPU;
  LogRecord record;
  options.log_callback = record_log;
  options.log_user_data = &record;
  options.log_level = FP8RL_LOG_INFO;
  fp8rl_context* context = nullptr;
  REQUIRE(fp8rl_context_create(&options, &context) == FP8RL_OK);
  fp8rl_context_destroy(context);
  REQUIRE(record.messages.size() == 1);
  CHECK(record.levels[0] == FP8RL_LOG_INFO);
  CHECK(record.messages[0].find("context created") != std::string::npos);

  LogRecord quiet;
  options.log_user_data = &quiet;
  options.log_level = FP8RL_LOG_WARNING;
  REQUIRE(fp8rl_context_create(&options, &context) == FP8RL_OK);
  fp8rl_context_destroy(context);
  CHECK(quiet.messages.empty());
}

TEST_CASE("an options struct from an older, shorter header keeps defaults for the missing fields") {
  fp8rl_context_options options;
  REQUIRE(fp8rl_context_options_init(&options) == FP8RL_OK);
  options.backend = FP8RL_BACKEND_CPU;
  options.num_threads = 1;
  options.log_callback = reinterpret_cast<fp8rl_log_callback>(0x1);  // beyond the old size: must be ignored
  options.struct_size = offsetof(fp8rl_context_options, log_level);
  fp8rl_context* context = nullptr;
  REQUIRE(fp8rl_context_create(&options, &context) == FP8RL_OK);
  int32_t threads = 0;
  REQUIRE(fp8rl_context_get_num_threads(context, &threads) == FP8RL_OK);
  CHECK(threads == 1);
  fp8rl_context_destroy(context);
}

TEST_CASE("fp8rl_convert on hand-derived values") {
  // E4M3: 1.0 = 0.0111.000; 448 = 0.1111.110; 2^-9 = 0.0000.001; 464 ties down to 448.
  const std::vector<float> values{1.0f, 448.0f, 0.001953125f, 464.0f, 500.0f, -0.0f, -3.0f};
  std::vector<uint8_t> saturated(values.size()), plain(values.size());
  REQUIRE(fp8rl_convert(values.data(), FP8RL_DTYPE_F32, saturated.data(), FP8RL_DTYPE_E4M3, values.size(), 1) ==
          FP8RL_OK);
  REQUIRE(fp8rl_convert(values.data(), FP8RL_DTYPE_F32, plain.data(), FP8RL_DTYPE_E4M3, values.size(), 0) == FP8RL_OK);
  CHECK(saturated == std::vector<uint8_t>{0x38, 0x7E, 0x01, 0x7E, 0x7E, 0x80, 0xC4});
  CHECK(plain[4] == 0x7F);  // overflow without saturation is NaN in E4M3
  std::vector<float> back(values.size());
  REQUIRE(fp8rl_convert(saturated.data(), FP8RL_DTYPE_E4M3, back.data(), FP8RL_DTYPE_F32, back.size(), 1) == FP8RL_OK);
  CHECK(back == std::vector<float>{1.0f, 448.0f, 0.001953125f, 448.0f, 448.0f, -0.0f, -3.0f});
  CHECK(std::signbit(back[5]));

  // BF16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and goes to the even one, 1.0.
  const float tie = 1.00390625f;
  uint16_t bf16 = 0;
  REQUIRE(fp8rl_convert(&tie, FP8RL_DTYPE_F32, &bf16, FP8RL_DTYPE_BF16, 1, 1) == FP8RL_OK);
  CHECK(bf16 == 0x3F80);
}

TEST_CASE("fp8rl_quantized_sizes for each layout") {
  fp8rl_quantize_options options;
  REQUIRE(fp8rl_quantize_options_init(&options) == FP8RL_OK);
  int64_t codes = 0, scales = 0;
  const struct {
    fp8rl_block_layout layout;
    int64_t scales;
  } cases[] = {{FP8RL_LAYOUT_TILE_1X128, 300 * 2},
               {FP8RL_LAYOUT_TILE_1X128_TRANSPOSED, 130 * 3},
               {FP8RL_LAYOUT_BLOCK_128X128, 3 * 2}};
  for (const auto& c : cases) {
    options.layout = c.layout;
    REQUIRE(fp8rl_quantized_sizes(&options, 300, 130, &codes, &scales) == FP8RL_OK);
    CHECK(codes == 300 * 130);
    CHECK(scales == c.scales);
  }
}

TEST_CASE("quantize then dequantize through the C API stays within E4M3 rounding") {
  CpuContext cpu;
  const int64_t rows = 5, cols = 200;
  std::vector<float> input(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) input[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + float(i % 7));
  fp8rl_quantize_options options;
  REQUIRE(fp8rl_quantize_options_init(&options) == FP8RL_OK);
  int64_t code_count = 0, scale_count = 0;
  REQUIRE(fp8rl_quantized_sizes(&options, rows, cols, &code_count, &scale_count) == FP8RL_OK);
  std::vector<uint8_t> codes(code_count);
  std::vector<float> scales(scale_count), back(rows * cols);
  REQUIRE(fp8rl_quantize(cpu.get(), &options, input.data(), FP8RL_DTYPE_F32, rows, cols, codes.data(), code_count,
                         scales.data(), scale_count) == FP8RL_OK);
  REQUIRE(fp8rl_dequantize(cpu.get(), &options, codes.data(), code_count, scales.data(), scale_count, rows, cols,
                           back.data(), rows * cols) == FP8RL_OK);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double x = input[r * cols + c], scale = scales[r * 2 + c / 128];
      // Half an E4M3 ulp relative (2^-4) in the normal range, half the subnormal step below it.
      const double bound = std::fmax(std::fabs(x) / 16.0, scale * std::ldexp(1.0, -10)) * (1 + 1e-6);
      CHECK(std::fabs(back[r * cols + c] - x) <= bound);
    }
}

TEST_CASE("FP8 and BF16 GEMMs on a case computed by hand") {
  CpuContext cpu;
  // A = [[1, 2], [3, 4]], W = [[1, 0], [0, 1], [1, 1]]: C = A W^T = [[1, 2, 3], [3, 4, 7]].
  const std::vector<float> a{1, 2, 3, 4}, w{1, 0, 0, 1, 1, 1};
  const std::vector<float> expected{1, 2, 3, 3, 4, 7};
  fp8rl_quantize_options options;
  REQUIRE(fp8rl_quantize_options_init(&options) == FP8RL_OK);
  options.scale_format = FP8RL_SCALE_POW2;  // power-of-2 scales keep these small integers exact
  std::vector<uint8_t> qa(4), qw(6);
  std::vector<float> sa(2), sw(1);
  REQUIRE(fp8rl_quantize(cpu.get(), &options, a.data(), FP8RL_DTYPE_F32, 2, 2, qa.data(), 4, sa.data(), 2) == FP8RL_OK);
  options.layout = FP8RL_LAYOUT_BLOCK_128X128;
  REQUIRE(fp8rl_quantize(cpu.get(), &options, w.data(), FP8RL_DTYPE_F32, 3, 2, qw.data(), 6, sw.data(), 1) == FP8RL_OK);
  const fp8rl_fp8_matrix ma{qa.data(), 4, sa.data(), 2, 2, 2, FP8RL_LAYOUT_TILE_1X128};
  const fp8rl_fp8_matrix mw{qw.data(), 6, sw.data(), 1, 3, 2, FP8RL_LAYOUT_BLOCK_128X128};
  std::vector<float> c(6);
  REQUIRE(fp8rl_gemm_fp8(cpu.get(), &ma, &mw, c.data(), FP8RL_DTYPE_F32, 6) == FP8RL_OK);
  CHECK(c == expected);
  std::vector<uint16_t> c16(6);
  REQUIRE(fp8rl_gemm_fp8(cpu.get(), &ma, &mw, c16.data(), FP8RL_DTYPE_BF16, 6) == FP8RL_OK);
  CHECK(c16 == std::vector<uint16_t>{0x3F80, 0x4000, 0x4040, 0x4040, 0x4080, 0x40E0});

  std::vector<uint16_t> a16(4), w16(6);
  REQUIRE(fp8rl_convert(a.data(), FP8RL_DTYPE_F32, a16.data(), FP8RL_DTYPE_BF16, 4, 1) == FP8RL_OK);
  REQUIRE(fp8rl_convert(w.data(), FP8RL_DTYPE_F32, w16.data(), FP8RL_DTYPE_BF16, 6, 1) == FP8RL_OK);
  std::fill(c.begin(), c.end(), 0.0f);
  REQUIRE(fp8rl_gemm_bf16(cpu.get(), a16.data(), 4, w16.data(), 6, 2, 3, 2, c.data(), FP8RL_DTYPE_F32, 6) == FP8RL_OK);
  CHECK(c == expected);
}

TEST_CASE("one context shared by two threads gives each the same result as running alone") {
  CpuContext cpu;
  const int64_t rows = 64, cols = 300;
  std::vector<float> input(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) input[i] = std::cos(0.011f * static_cast<float>(i)) * 3.0f;
  fp8rl_quantize_options options;
  REQUIRE(fp8rl_quantize_options_init(&options) == FP8RL_OK);
  int64_t code_count = 0, scale_count = 0;
  REQUIRE(fp8rl_quantized_sizes(&options, rows, cols, &code_count, &scale_count) == FP8RL_OK);
  std::vector<uint8_t> alone(code_count);
  std::vector<float> alone_scales(scale_count);
  REQUIRE(fp8rl_quantize(cpu.get(), &options, input.data(), FP8RL_DTYPE_F32, rows, cols, alone.data(), code_count,
                         alone_scales.data(), scale_count) == FP8RL_OK);
  auto worker = [&](bool* all_equal) {
    std::vector<uint8_t> codes(code_count);
    std::vector<float> scales(scale_count);
    for (int i = 0; i < 50; ++i) {
      const fp8rl_status status = fp8rl_quantize(cpu.get(), &options, input.data(), FP8RL_DTYPE_F32, rows, cols,
                                                 codes.data(), code_count, scales.data(), scale_count);
      *all_equal = *all_equal && status == FP8RL_OK && codes == alone && scales == alone_scales;
    }
  };
  bool first = true, second = true;
  std::thread a(worker, &first), b(worker, &second);
  a.join();
  b.join();
  CHECK(first);
  CHECK(second);
}
