// Element-wise accuracy of block quantization through quantize_units and
// dequantize_rows, all layouts, both formats and scale formats, both
// saturation modes, f32 and bf16 inputs, partial blocks.
//
// Oracle: float64. For each element, q = x / scale (the block's own scale);
// the decoded code must lie within half an FP8 ulp of q at q's magnitude (the
// fixed subnormal quantum below the smallest normal), plus 2^-24 |q| for the
// float32 division the quantizer is specified to perform. Codes are decoded by
// the test's own bit-field decoder. Stricter, the exact contract: each code is
// the nearest-even FP8 (test-side grid rounder) of the IEEE float32 quotient.
// dequantize_rows must return decode(code) * scale rounded once to float32.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <initializer_list>

#include "kernels/cpu/quantize_cpu.h"
#include "numerics/block_reference.h"
#include "numerics/block_sweep.h"
#include "numerics/fp8_reference.h"

namespace fp8rl::test {
namespace {

std::string check_block_elements(const Matrix& m, const QuantSpec& spec, const Quantized& q, const Block& b) {
  const float scale = q.scales[static_cast<size_t>(b.scale_pos)];
  for (int64_t r = b.row0; r < b.row0 + b.nrows; ++r)
    for (int64_t c = b.col0; c < b.col0 + b.ncols; ++c) {
      const uint8_t code = q.codes[static_cast<size_t>(ref_code_pos(spec.layout, m.rows, m.cols, r, c))];
      const std::string failure = check_element(m.at(r, c), code, scale, spec);
      if (!failure.empty()) return "element (" + std::to_string(r) + ", " + std::to_string(c) + "): " + failure;
    }
  return "";
}

TEST_CASE("numerics: block quantization: every element within the FP8 rounding bound of x/scale") {
  const SweepResult result = sweep_blocks(true, check_block_elements);
  CHECK(result.failures == 0);
  CHECK(result.blocks > 10000);
}

// The exact contract, which CPU and CUDA must share bit for bit: the code is
// the nearest-even FP8 of the IEEE float32 quotient x / scale (block_scale.h),
// rounded by the test's own grid search (validated against ml_dtypes in
// fp8_encode_test). Stricter than the bound above: it also pins down the
// rare cases where float32 rounding of the quotient lands on an FP8 tie.
std::string check_block_contract(const Matrix& m, const QuantSpec& spec, const Quantized& q, const Block& b) {
  const float scale = q.scales[static_cast<size_t>(b.scale_pos)];
  for (int64_t r = b.row0; r < b.row0 + b.nrows; ++r)
    for (int64_t c = b.col0; c < b.col0 + b.ncols; ++c) {
      const uint8_t code = q.codes[static_cast<size_t>(ref_code_pos(spec.layout, m.rows, m.cols, r, c))];
      const float quotient = m.at(r, c) / scale;  // one IEEE float32 division
      const uint8_t expected = ref_encode(static_cast<double>(quotient), spec.format, spec.saturate);
      const bool ok = ref_is_nan(expected, spec.format) ? ref_is_nan(code, spec.format) : code == expected;
      if (!ok)
        return "element (" + std::to_string(r) + ", " + std::to_string(c) + "): code " + std::to_string(code) +
               ", nearest-even of x/scale is " + std::to_string(expected);
    }
  return "";
}

TEST_CASE("numerics: block quantization: every code is the nearest-even FP8 of the float32 x/scale") {
  const SweepResult result = sweep_blocks(true, check_block_contract);
  CHECK(result.failures == 0);
  CHECK(result.blocks > 10000);
}

// decode(code) * scale in float64 is exact (<= 4 + 24 significant bits), so a
// single cast to float is the correctly rounded float32 product.
float expected_dequantized(uint8_t code, float scale, Fp8Format format) {
  if (ref_is_nan(code, format)) return NAN;
  if (ref_is_inf(code, format)) return (code & 0x80) ? -INFINITY : INFINITY;
  return static_cast<float>(ref_decode(code, format) * static_cast<double>(scale));
}

// Dequantizes the whole matrix in two row ranges (the API works on row ranges)
// and counts elements differing from the reference.
long dequantize_mismatches(const Matrix& m, const QuantSpec& spec, const Quantized& q) {
  const Fp8Matrix fm{q.codes.data(), q.scales.data(), m.rows, m.cols, spec.layout, spec.format};
  std::vector<float> out(static_cast<size_t>(m.rows * m.cols), -7.0f);
  cpu::dequantize_rows(fm, out.data(), 0, m.rows / 2);
  cpu::dequantize_rows(fm, out.data(), m.rows / 2, m.rows);
  long mismatches = 0;
  for (const Block& b : ref_blocks(spec.layout, m.rows, m.cols))
    for (int64_t r = b.row0; r < b.row0 + b.nrows; ++r)
      for (int64_t c = b.col0; c < b.col0 + b.ncols; ++c) {
        const uint8_t code = q.codes[static_cast<size_t>(ref_code_pos(spec.layout, m.rows, m.cols, r, c))];
        const float expected = expected_dequantized(code, q.scales[static_cast<size_t>(b.scale_pos)], spec.format);
        const float actual = out[static_cast<size_t>(r * m.cols + c)];
        mismatches += !(std::isnan(expected) ? std::isnan(actual) : bits_of(actual) == bits_of(expected));
      }
  return mismatches;
}

TEST_CASE("numerics: dequantize_rows: decode(code) * scale rounded once, for every layout") {
  for (const Shape& shape : sweep_shapes())
    for (DType dtype : {DType::f32, DType::bf16}) {
      const Matrix m = random_matrix(shape.rows, shape.cols, dtype, 2);
      for (const QuantSpec& spec : sweep_specs(false)) {
        INFO(describe(spec, dtype, m.rows, m.cols));
        CHECK(dequantize_mismatches(m, spec, quantize(m, spec)) == 0);
      }
    }
}

}  // namespace
}  // namespace fp8rl::test
