#include "core/train/linear_grads.h"

#include "core/policy/quantized_operand.h"

namespace fp8rl::train {

using policy::quantize_operand;

void linear_dgrad(Backend& backend, const policy::LinearWeights& transposed, ScaleFormat scale_format, const float* dy,
                  int64_t m, float* dx, LinearGradScratch& scratch) {
  const int64_t n = transposed.in_features, k = transposed.out_features;  // W^T is [k, n]
  if (transposed.fp8) {
    const Fp8Matrix a =
        quantize_operand(backend, dy, m, n, BlockLayout::tile_1x128, scale_format, scratch.a_codes, scratch.a_scales);
    backend.gemm_fp8(a, transposed.fp8_matrix(), dx, DType::f32);
    return;
  }
  scratch.a_bf16.reserve_discarding(backend, static_cast<size_t>(m * n));
  backend.to_bf16(dy, m * n, scratch.a_bf16.data());
  backend.gemm_bf16(scratch.a_bf16.data(), transposed.bf16.data(), m, k, n, dx, DType::f32);
}

void linear_wgrad(Backend& backend, bool fp8, ScaleFormat scale_format, const float* dy, const float* x, int64_t m,
                  int64_t out_features, int64_t in_features, float* dw, LinearGradScratch& scratch) {
  if (fp8) {
    const Fp8Matrix a = quantize_operand(backend, dy, m, out_features, BlockLayout::tile_1x128_transposed, scale_format,
                                         scratch.a_codes, scratch.a_scales);  // [out, m]
    const Fp8Matrix w = quantize_operand(backend, x, m, in_features, BlockLayout::tile_1x128_transposed, scale_format,
                                         scratch.b_codes, scratch.b_scales);  // [in, m]
    backend.gemm_fp8(a, w, dw, DType::f32);
    return;
  }
  scratch.a_bf16.reserve_discarding(backend, static_cast<size_t>(m * out_features));
  scratch.b_bf16.reserve_discarding(backend, static_cast<size_t>(m * in_features));
  backend.transpose_to_bf16(dy, m, out_features, scratch.a_bf16.data());  // [out, m]
  backend.transpose_to_bf16(x, m, in_features, scratch.b_bf16.data());    // [in, m]
  backend.gemm_bf16(scratch.a_bf16.data(), scratch.b_bf16.data(), out_features, in_features, m, dw, DType::f32);
}

}  // namespace fp8rl::train
