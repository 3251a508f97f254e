#include "host_ops.h"

#include <limits>
#include <string>

#include "finite_scan.h"
#include "staging.h"

namespace fp8rl {
namespace {

std::string shape_text(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

void require_count(int64_t given, int64_t needed, const char* what, const std::string& context) {
  require(given == needed,
          std::string(what) + " is " + std::to_string(given) + " but " + context + " needs " + std::to_string(needed));
}

void require_finite(const void* data, DType dtype, int64_t count, const char* what) {
  const int64_t bad = first_non_finite(data, dtype, count);
  if (bad >= 0) fail(Status::non_finite, std::string(what) + "[" + std::to_string(bad) + "] is NaN or Inf");
}

// Checks pointers, array lengths, NaN codes and scales of a quantized operand.
void validate_fp8_matrix(const HostFp8Matrix& m, const char* name) {
  const std::string prefix(name);
  require(m.codes != nullptr, prefix + ".codes is NULL");
  require(m.scales != nullptr, prefix + ".scales is NULL");
  const int64_t elements = checked_element_count(m.rows, m.cols, name);
  const std::string matrix = "a " + shape_text(m.rows, m.cols) + " matrix";
  require_count(m.code_count, elements, (prefix + ".code_count").c_str(), matrix);
  require_count(m.scale_count, scale_shape(m.layout, m.rows, m.cols).count(), (prefix + ".scale_count").c_str(),
                matrix + " in this layout");
  const int64_t bad_code = first_nan_code(m.codes, m.format, m.code_count);
  if (bad_code >= 0) fail(Status::non_finite, prefix + ".codes[" + std::to_string(bad_code) + "] is a NaN code");
  const int64_t bad_scale = first_bad_scale(m.scales, m.scale_count);
  if (bad_scale >= 0)
    fail(Status::non_finite, prefix + ".scales[" + std::to_string(bad_scale) + "] is not a finite positive number");
}

Fp8Matrix device_view(const HostFp8Matrix& m, const StagedInput& codes, const StagedInput& scales) {
  return Fp8Matrix{codes.as<uint8_t>(), scales.as<float>(), m.rows, m.cols, m.layout, m.format};
}

}  // namespace

int64_t checked_element_count(int64_t rows, int64_t cols, const char* what) {
  require(rows > 0 && cols > 0,
          std::string(what) + " has shape " + shape_text(rows, cols) + ": both dimensions must be positive");
  require(rows <= std::numeric_limits<int64_t>::max() / cols,
          std::string(what) + " has shape " + shape_text(rows, cols) + ": too many elements");
  return rows * cols;
}

void quantize_host(Context& context, const QuantizeRequest& request, const void* input, DType input_dtype, int64_t rows,
                   int64_t cols, uint8_t* codes, int64_t code_count, float* scales, int64_t scale_count) {
  require(input != nullptr, "input is NULL");
  require(codes != nullptr, "codes is NULL");
  require(scales != nullptr, "scales is NULL");
  const int64_t elements = checked_element_count(rows, cols, "input");
  const std::string matrix = "a " + shape_text(rows, cols) + " matrix";
  require_count(code_count, elements, "code_count", matrix);
  require_count(scale_count, scale_shape(request.spec.layout, rows, cols).count(), "scale_count",
                matrix + " in this layout");
  if (!request.allow_non_finite) require_finite(input, input_dtype, elements, "input");

  Backend& backend = context.backend();
  const StagedInput device_input(backend, input, static_cast<size_t>(elements) * dtype_size(input_dtype));
  StagedOutput device_codes(backend, codes, static_cast<size_t>(elements));
  StagedOutput device_scales(backend, scales, static_cast<size_t>(scale_count) * sizeof(float));
  backend.quantize(device_input.as<void>(), input_dtype, rows, cols, request.spec, device_codes.as<uint8_t>(),
                   device_scales.as<float>());
  device_codes.finish();
  device_scales.finish();
}

void dequantize_host(Context& context, const HostFp8Matrix& matrix, float* output, int64_t output_count) {
  require(output != nullptr, "output is NULL");
  validate_fp8_matrix(matrix, "input");
  require_count(output_count, matrix.rows * matrix.cols, "output_count",
                "a " + shape_text(matrix.rows, matrix.cols) + " matrix");

  Backend& backend = context.backend();
  const StagedInput codes(backend, matrix.codes, static_cast<size_t>(matrix.code_count));
  const StagedInput scales(backend, matrix.scales, static_cast<size_t>(matrix.scale_count) * sizeof(float));
  StagedOutput device_output(backend, output, static_cast<size_t>(output_count) * sizeof(float));
  backend.dequantize(device_view(matrix, codes, scales), device_output.as<float>());
  device_output.finish();
}

void gemm_fp8_host(Context& context, const HostFp8Matrix& a, const HostFp8Matrix& w, void* c, DType c_dtype,
                   int64_t c_count) {
  require(c != nullptr, "c is NULL");
  validate_fp8_matrix(a, "a");
  validate_fp8_matrix(w, "w");
  require(a.cols == w.cols, "a is " + shape_text(a.rows, a.cols) + " and w is " + shape_text(w.rows, w.cols) +
                                ": their K dimensions (cols) differ");
  const int64_t outputs = checked_element_count(a.rows, w.rows, "c");
  require_count(c_count, outputs, "c_count", "C " + shape_text(a.rows, w.rows));

  Backend& backend = context.backend();
  const StagedInput a_codes(backend, a.codes, static_cast<size_t>(a.code_count));
  const StagedInput a_scales(backend, a.scales, static_cast<size_t>(a.scale_count) * sizeof(float));
  const StagedInput w_codes(backend, w.codes, static_cast<size_t>(w.code_count));
  const StagedInput w_scales(backend, w.scales, static_cast<size_t>(w.scale_count) * sizeof(float));
  StagedOutput device_c(backend, c, static_cast<size_t>(outputs) * dtype_size(c_dtype));
  backend.gemm_fp8(device_view(a, a_codes, a_scales), device_view(w, w_codes, w_scales), device_c.as<void>(), c_dtype);
  device_c.finish();
}

void gemm_bf16_host(Context& context, const uint16_t* a, int64_t a_count, const uint16_t* w, int64_t w_count, int64_t m,
                    int64_t n, int64_t k, void* c, DType c_dtype, int64_t c_count) {
  require(a != nullptr, "a is NULL");
  require(w != nullptr, "w is NULL");
  require(c != nullptr, "c is NULL");
  require_count(a_count, checked_element_count(m, k, "a"), "a_count", "A " + shape_text(m, k));
  require_count(w_count, checked_element_count(n, k, "w"), "w_count", "W " + shape_text(n, k));
  require_count(c_count, checked_element_count(m, n, "c"), "c_count", "C " + shape_text(m, n));
  require_finite(a, DType::bf16, a_count, "a");
  require_finite(w, DType::bf16, w_count, "w");

  Backend& backend = context.backend();
  const StagedInput device_a(backend, a, static_cast<size_t>(a_count) * 2);
  const StagedInput device_w(backend, w, static_cast<size_t>(w_count) * 2);
  StagedOutput device_c(backend, c, static_cast<size_t>(c_count) * dtype_size(c_dtype));
  backend.gemm_bf16(device_a.as<uint16_t>(), device_w.as<uint16_t>(), m, n, k, device_c.as<void>(), c_dtype);
  device_c.finish();
}

}  // namespace fp8rl
