#include "api_guard.h"
#include "core/convert.h"
#include "core/host_ops.h"
#include "enum_mapping.h"
#include "handles.h"

using namespace fp8rl::capi;

namespace {

fp8rl_quantize_options default_quantize_options() {
  fp8rl_quantize_options options{};
  options.struct_size = sizeof(options);
  options.format = FP8RL_DTYPE_E4M3;
  options.layout = FP8RL_LAYOUT_TILE_1X128;
  options.scale_format = FP8RL_SCALE_FP32;
  options.saturate = 1;
  options.allow_non_finite = 0;
  return options;
}

fp8rl::QuantizeRequest quantize_request(const fp8rl_quantize_options* given) {
  const auto options = read_options(given, default_quantize_options(), "options");
  fp8rl::QuantizeRequest request;
  request.spec.format = fp8_format_from(options.format, "options->format");
  request.spec.layout = layout_from(options.layout, "options->layout");
  request.spec.scale_format = scale_format_from(options.scale_format, "options->scale_format");
  request.spec.saturate = options.saturate != 0;
  request.allow_non_finite = options.allow_non_finite != 0;
  return request;
}

fp8rl::ElementType element_type_from(fp8rl_dtype dtype, const char* what) {
  const int32_t v = raw(dtype);
  fp8rl::require(v >= FP8RL_DTYPE_F32 && v <= FP8RL_DTYPE_E5M2, enum_message(what, v, "an fp8rl_dtype value"));
  return static_cast<fp8rl::ElementType>(v);
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_convert(const void* src, fp8rl_dtype src_dtype, void* dst, fp8rl_dtype dst_dtype,
                                     size_t count, int32_t saturate) {
  return guarded(__func__, [&] {
    fp8rl::convert_elements(src, element_type_from(src_dtype, "src_dtype"), dst,
                            element_type_from(dst_dtype, "dst_dtype"), count, saturate != 0);
  });
}

FP8RL_API fp8rl_status fp8rl_quantize_options_init(fp8rl_quantize_options* options) {
  return guarded(__func__, [&] {
    fp8rl::require(options != nullptr, "options is NULL");
    *options = default_quantize_options();
  });
}

FP8RL_API fp8rl_status fp8rl_quantized_sizes(const fp8rl_quantize_options* options, int64_t rows, int64_t cols,
                                             int64_t* out_code_count, int64_t* out_scale_count) {
  return guarded(__func__, [&] {
    const auto request = quantize_request(options);
    fp8rl::require(out_code_count != nullptr, "out_code_count is NULL");
    fp8rl::require(out_scale_count != nullptr, "out_scale_count is NULL");
    const int64_t codes = fp8rl::checked_element_count(rows, cols, "the matrix");
    *out_code_count = codes;
    *out_scale_count = fp8rl::scale_shape(request.spec.layout, rows, cols).count();
  });
}

FP8RL_API fp8rl_status fp8rl_quantize(fp8rl_context* context, const fp8rl_quantize_options* options, const void* input,
                                      fp8rl_dtype input_dtype, int64_t rows, int64_t cols, uint8_t* codes,
                                      int64_t code_count, float* scales, int64_t scale_count) {
  return guarded(__func__, [&] {
    auto& impl = context_of(context);
    const auto request = quantize_request(options);
    const fp8rl::DType dtype = float_dtype_from(input_dtype, "input_dtype");
    const std::lock_guard<std::mutex> lock(impl.mutex());
    fp8rl::quantize_host(impl, request, input, dtype, rows, cols, codes, code_count, scales, scale_count);
  });
}

FP8RL_API fp8rl_status fp8rl_dequantize(fp8rl_context* context, const fp8rl_quantize_options* options,
                                        const uint8_t* codes, int64_t code_count, const float* scales,
                                        int64_t scale_count, int64_t rows, int64_t cols, float* output,
                                        int64_t output_count) {
  return guarded(__func__, [&] {
    auto& impl = context_of(context);
    const auto request = quantize_request(options);
    const fp8rl::HostFp8Matrix matrix{
        codes, code_count, scales, scale_count, rows, cols, request.spec.layout, request.spec.format};
    const std::lock_guard<std::mutex> lock(impl.mutex());
    fp8rl::dequantize_host(impl, matrix, output, output_count);
  });
}

}  // extern "C"
