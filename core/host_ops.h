// The public numerics operations on caller-owned host arrays: argument
// validation with precise messages, staging to the context's backend, and the
// call itself. capi/src is a thin shim over these.
#pragma once

#include <cstdint>

#include "context.h"

namespace fp8rl {

// A quantized matrix in host memory, with the array lengths the caller claims.
struct HostFp8Matrix {
  const uint8_t* codes = nullptr;
  int64_t code_count = 0;
  const float* scales = nullptr;
  int64_t scale_count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  BlockLayout layout = BlockLayout::tile_1x128;
  Fp8Format format = Fp8Format::e4m3;
};

struct QuantizeRequest {
  QuantSpec spec;
  bool allow_non_finite = false;
};

// Number of elements of a [rows, cols] matrix; throws on non-positive or overflowing sizes.
int64_t checked_element_count(int64_t rows, int64_t cols, const char* what);

void quantize_host(Context& context, const QuantizeRequest& request, const void* input, DType input_dtype, int64_t rows,
                   int64_t cols, uint8_t* codes, int64_t code_count, float* scales, int64_t scale_count);

void dequantize_host(Context& context, const HostFp8Matrix& matrix, float* output, int64_t output_count);

void gemm_fp8_host(Context& context, const HostFp8Matrix& a, const HostFp8Matrix& w, void* c, DType c_dtype,
                   int64_t c_count);

void gemm_bf16_host(Context& context, const uint16_t* a, int64_t a_count, const uint16_t* w, int64_t w_count, int64_t m,
                    int64_t n, int64_t k, void* c, DType c_dtype, int64_t c_count);

}  // namespace fp8rl
