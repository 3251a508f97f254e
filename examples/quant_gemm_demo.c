/* fp8rl demo: block-quantization and GEMM accuracy and speed on the CPU,
 * through the public C API only. `./run demo` builds and runs it. */
#include <fp8rl/fp8rl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    fp8rl_status status_ = (call);                                           \
    if (status_ != FP8RL_OK) {                                               \
      fprintf(stderr, "%s failed: %s\n", #call, fp8rl_last_error_message()); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

enum { M = 256, N = 2048, K = 768, REPEATS = 5 };

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static double uniform01(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

/* N(0, 1) with a few large outliers per row, like LLM activations. */
static void fill_activations(float* x, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    double g = sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01());
    x[i] = (float)(uniform01() < 0.002 ? 40.0 * g : g);
  }
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* values, int count) {
  qsort(values, (size_t)count, sizeof *values, compare_doubles);
  return values[count / 2];
}

/* Relative RMS error of `got` against `want`. */
static double relative_rms(const float* got, const double* want, size_t count) {
  double error = 0.0, norm = 0.0;
  for (size_t i = 0; i < count; ++i) {
    error += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return sqrt(error / norm);
}

static void quantization_row(fp8rl_context* context, const float* x, fp8rl_dtype format, fp8rl_block_layout layout,
                             fp8rl_scale_format scales_format, const char* label) {
  fp8rl_quantize_options options;
  CHECK(fp8rl_quantize_options_init(&options));
  options.format = format;
  options.layout = layout;
  options.scale_format = scales_format;
  int64_t code_count = 0, scale_count = 0;
  CHECK(fp8rl_quantized_sizes(&options, M, K, &code_count, &scale_count));
  uint8_t* codes = malloc((size_t)code_count);
  float* scales = malloc((size_t)scale_count * sizeof *scales);
  float* back = malloc((size_t)M * K * sizeof *back);
  double* original = malloc((size_t)M * K * sizeof *original);
  double seconds[REPEATS];
  for (int r = 0; r < REPEATS; ++r) {
    double start = now_seconds();
    CHECK(fp8rl_quantize(context, &options, x, FP8RL_DTYPE_F32, M, K, codes, code_count, scales, scale_count));
    seconds[r] = now_seconds() - start;
  }
  CHECK(fp8rl_dequantize(context, &options, codes, code_count, scales, scale_count, M, K, back, (int64_t)M * K));
  for (size_t i = 0; i < (size_t)M * K; ++i) original[i] = x[i];
  printf("| %-28s | %14.3e | %12.1f |\n", label, relative_rms(back, original, (size_t)M * K),
         (double)M * K / median(seconds, REPEATS) * 1e-6);
  free(codes), free(scales), free(back), free(original);
}

/* C = A . W^T in float64 on the original (unquantized) inputs. */
static void reference_gemm(const float* a, const float* w, double* c) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double sum = 0.0;
      for (int k = 0; k < K; ++k) sum += (double)a[(size_t)m * K + k] * (double)w[(size_t)n * K + k];
      c[(size_t)m * N + n] = sum;
    }
}

static void quantize_operand(fp8rl_context* context, const float* x, int64_t rows, fp8rl_block_layout layout,
                             fp8rl_fp8_matrix* out) {
  fp8rl_quantize_options options;
  CHECK(fp8rl_quantize_options_init(&options));
  options.layout = layout;
  int64_t code_count = 0, scale_count = 0;
  CHECK(fp8rl_quantized_sizes(&options, rows, K, &code_count, &scale_count));
  uint8_t* codes = malloc((size_t)code_count);
  float* scales = malloc((size_t)scale_count * sizeof *scales);
  CHECK(fp8rl_quantize(context, &options, x, FP8RL_DTYPE_F32, rows, K, codes, code_count, scales, scale_count));
  *out = (fp8rl_fp8_matrix){codes, code_count, scales, scale_count, rows, K, layout};
}

static void gemm_rows(fp8rl_context* context, const float* a, const float* w) {
  double* exact = malloc((size_t)M * N * sizeof *exact);
  float* c = malloc((size_t)M * N * sizeof *c);
  uint16_t* a16 = malloc((size_t)M * K * sizeof *a16);
  uint16_t* w16 = malloc((size_t)N * K * sizeof *w16);
  double seconds[REPEATS], flops = 2.0 * M * N * K;
  fp8rl_fp8_matrix qa, qw;
  reference_gemm(a, w, exact);
  quantize_operand(context, a, M, FP8RL_LAYOUT_TILE_1X128, &qa);
  quantize_operand(context, w, N, FP8RL_LAYOUT_BLOCK_128X128, &qw);
  for (int r = 0; r < REPEATS; ++r) {
    double start = now_seconds();
    CHECK(fp8rl_gemm_fp8(context, &qa, &qw, c, FP8RL_DTYPE_F32, (int64_t)M * N));
    seconds[r] = now_seconds() - start;
  }
  printf("| %-28s | %14.3e | %12.1f |\n", "FP8 E4M3 block-scaled", relative_rms(c, exact, (size_t)M * N),
         flops / median(seconds, REPEATS) * 1e-9);
  CHECK(fp8rl_convert(a, FP8RL_DTYPE_F32, a16, FP8RL_DTYPE_BF16, (size_t)M * K, 1));
  CHECK(fp8rl_convert(w, FP8RL_DTYPE_F32, w16, FP8RL_DTYPE_BF16, (size_t)N * K, 1));
  for (int r = 0; r < REPEATS; ++r) {
    double start = now_seconds();
    CHECK(fp8rl_gemm_bf16(context, a16, (int64_t)M * K, w16, (int64_t)N * K, M, N, K, c, FP8RL_DTYPE_F32,
                          (int64_t)M * N));
    seconds[r] = now_seconds() - start;
  }
  printf("| %-28s | %14.3e | %12.1f |\n", "BF16", relative_rms(c, exact, (size_t)M * N),
         flops / median(seconds, REPEATS) * 1e-9);
  free((void*)qa.codes), free((void*)qa.scales), free((void*)qw.codes), free((void*)qw.scales);
  free(exact), free(c), free(a16), free(w16);
}

int main(void) {
  fp8rl_context_options options;
  CHECK(fp8rl_context_options_init(&options));
  options.backend = FP8RL_BACKEND_CPU;
  fp8rl_context* context = NULL;
  CHECK(fp8rl_context_create(&options, &context));
  const char* device = NULL;
  CHECK(fp8rl_context_get_description(context, &device));
  printf("fp8rl %s on %s\n\n", fp8rl_version_string(), device);

  float* a = malloc((size_t)M * K * sizeof *a);
  float* w = malloc((size_t)N * K * sizeof *w);
  fill_activations(a, (size_t)M * K);
  for (size_t i = 0; i < (size_t)N * K; ++i) w[i] = (float)(0.05 * (2.0 * uniform01() - 1.0));

  printf("Quantization of activations [%d, %d] (N(0,1) with 0.2%% outliers x40)\n\n", M, K);
  printf("| %-28s | %14s | %12s |\n|%s|%s|%s|\n", "format / blocks / scales", "rel. RMS error", "Melem/s",
         "------------------------------", "----------------", "--------------");
  quantization_row(context, a, FP8RL_DTYPE_E4M3, FP8RL_LAYOUT_TILE_1X128, FP8RL_SCALE_FP32, "E4M3 1x128 FP32 scales");
  quantization_row(context, a, FP8RL_DTYPE_E4M3, FP8RL_LAYOUT_TILE_1X128, FP8RL_SCALE_POW2, "E4M3 1x128 pow2 scales");
  quantization_row(context, a, FP8RL_DTYPE_E4M3, FP8RL_LAYOUT_BLOCK_128X128, FP8RL_SCALE_FP32,
                   "E4M3 128x128 FP32 scales");
  quantization_row(context, a, FP8RL_DTYPE_E5M2, FP8RL_LAYOUT_TILE_1X128, FP8RL_SCALE_FP32, "E5M2 1x128 FP32 scales");

  printf("\nGEMM C[%d,%d] = A[%d,%d] . W[%d,%d]^T, error against float64 on the unquantized inputs\n\n", M, N, M, K, N,
         K);
  printf("| %-28s | %14s | %12s |\n|%s|%s|%s|\n", "kernel", "rel. RMS error", "GFLOP/s",
         "------------------------------", "----------------", "--------------");
  gemm_rows(context, a, w);

  free(a), free(w);
  CHECK(fp8rl_context_destroy(context));
  return 0;
}
