#include "api_guard.h"
#include "core/host_ops.h"
#include "enum_mapping.h"
#include "handles.h"

using namespace fp8rl::capi;

namespace {

fp8rl::HostFp8Matrix host_matrix(const fp8rl_fp8_matrix* matrix, const char* name) {
  fp8rl::require(matrix != nullptr, std::string(name) + " is NULL");
  return fp8rl::HostFp8Matrix{matrix->codes,
                              matrix->code_count,
                              matrix->scales,
                              matrix->scale_count,
                              matrix->rows,
                              matrix->cols,
                              layout_from(matrix->layout, std::string(name) + "->layout"),
                              fp8rl::Fp8Format::e4m3};
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_gemm_fp8(fp8rl_context* context, const fp8rl_fp8_matrix* a, const fp8rl_fp8_matrix* w,
                                      void* c, fp8rl_dtype c_dtype, int64_t c_count) {
  return guarded(__func__, [&] {
    auto& impl = context_of(context);
    const auto host_a = host_matrix(a, "a");
    const auto host_w = host_matrix(w, "w");
    fp8rl::require(host_a.layout == fp8rl::BlockLayout::tile_1x128, "a->layout must be FP8RL_LAYOUT_TILE_1X128");
    fp8rl::require(host_w.layout != fp8rl::BlockLayout::tile_1x128_transposed,
                   "w->layout must be FP8RL_LAYOUT_BLOCK_128X128 or FP8RL_LAYOUT_TILE_1X128");
    const fp8rl::DType dtype = float_dtype_from(c_dtype, "c_dtype");
    const std::lock_guard<std::mutex> lock(impl.mutex());
    fp8rl::gemm_fp8_host(impl, host_a, host_w, c, dtype, c_count);
  });
}

FP8RL_API fp8rl_status fp8rl_gemm_bf16(fp8rl_context* context, const uint16_t* a, int64_t a_count, const uint16_t* w,
                                       int64_t w_count, int64_t m, int64_t n, int64_t k, void* c, fp8rl_dtype c_dtype,
                                       int64_t c_count) {
  return guarded(__func__, [&] {
    auto& impl = context_of(context);
    const fp8rl::DType dtype = float_dtype_from(c_dtype, "c_dtype");
    const std::lock_guard<std::mutex> lock(impl.mutex());
    fp8rl::gemm_bf16_host(impl, a, a_count, w, w_count, m, n, k, c, dtype, c_count);
  });
}

}  // extern "C"
