// Block quantization at the edges of its domain: all-zero blocks, NaN and Inf
// inside a block, tiny and huge amax.
//
// Oracles: the documented outcomes (block_scale.h, GUIDE section 3): amax = 0
// -> scale 1 and zero codes; NaN -> NaN code; +-Inf -> +-max when saturating
// (NaN for e4m3fn / +-Inf for e5m2 otherwise); the scale comes from the finite
// values only; tiny amax -> a finite scale (floored at 2^-126) and finite
// dequantized values. Scales and elements are then judged by the float64
// checks of block_reference.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "numerics/block_reference.h"
#include "numerics/fp8_reference.h"

namespace fp8rl::test {
namespace {

// Element k of the first block of a layout: along row 0, or down column 0 for
// the transposed tiles (whose blocks are column segments).
void place(Matrix& m, BlockLayout layout, int64_t k, float x) {
  if (layout == BlockLayout::tile_1x128_transposed)
    m.set(k, 0, x);
  else
    m.set(0, k, x);
}

// x as an input of that dtype holds it (bf16 inputs are truncated by Matrix::set).
double as_stored(double x, DType dtype) {
  Matrix one = zeros(1, 1, dtype);
  one.set(0, 0, static_cast<float>(x));
  return one.at(0, 0);
}

// Quantizes a 130x130 matrix holding `values` at the start of the first block
// (zeros elsewhere) and checks that block's scale and elements.
void check_first_block(const std::vector<float>& values, double expected_amax, DType dtype, const QuantSpec& spec) {
  Matrix m = zeros(130, 130, dtype);
  for (size_t k = 0; k < values.size(); ++k) place(m, spec.layout, static_cast<int64_t>(k), values[k]);
  const Quantized q = quantize(m, spec);
  const Block first = ref_blocks(spec.layout, m.rows, m.cols).front();
  INFO(describe(spec, dtype, m.rows, m.cols));
  expected_amax = as_stored(expected_amax, dtype);
  CHECK(ref_block_amax(m, first) == expected_amax);  // the test put in what it meant to
  const float scale = q.scales[static_cast<size_t>(first.scale_pos)];
  CHECK(check_scale(expected_amax, scale, spec.format, spec.scale_format) == "");
  CHECK(std::isfinite(scale));
  for (size_t k = 0; k < values.size(); ++k) {
    const int64_t r = spec.layout == BlockLayout::tile_1x128_transposed ? static_cast<int64_t>(k) : 0;
    const int64_t c = spec.layout == BlockLayout::tile_1x128_transposed ? 0 : static_cast<int64_t>(k);
    const uint8_t code = q.codes[static_cast<size_t>(ref_code_pos(spec.layout, m.rows, m.cols, r, c))];
    INFO("element ", k, " = ", m.at(r, c), " code ", static_cast<int>(code));
    CHECK(check_element(m.at(r, c), code, scale, spec) == "");
    if (std::isfinite(m.at(r, c)) && (spec.scale_format == ScaleFormat::fp32 || expected_amax < 1e30))
      CHECK(std::isfinite(dequantize_value(code, scale, spec.format)));
  }
}

void for_all_specs(const std::vector<float>& values, double expected_amax) {
  for (DType dtype : {DType::f32, DType::bf16})
    for (const QuantSpec& spec : sweep_specs(true)) check_first_block(values, expected_amax, dtype, spec);
}

TEST_CASE("numerics: block quantization: amax = 0 gives scale 1 and zero codes") {
  for (float zero : {0.0f, -0.0f})
    for (DType dtype : {DType::f32, DType::bf16})
      for (const QuantSpec& spec : sweep_specs(true)) {
        Matrix m = zeros(3, 130, dtype);
        for (int64_t i = 0; i < m.rows * m.cols; ++i) m.set(i / m.cols, i % m.cols, zero);
        const Quantized q = quantize(m, spec);
        INFO(describe(spec, dtype, m.rows, m.cols), " zero=", zero);
        const uint8_t expected_code = std::signbit(zero) ? 0x80 : 0x00;  // sign kept, as ml_dtypes does
        CHECK(std::count(q.scales.begin(), q.scales.end(), 1.0f) == static_cast<long>(q.scales.size()));
        CHECK(std::count(q.codes.begin(), q.codes.end(), expected_code) == static_cast<long>(q.codes.size()));
      }
}

TEST_CASE("numerics: block quantization: NaN and Inf do not set the scale, NaN -> NaN and Inf -> +-max") {
  for_all_specs({NAN, INFINITY, -INFINITY, 3.5f, -1.25f, 0.5f, -NAN, 1e-3f}, 3.5);
  for_all_specs({3.0f, INFINITY, -2.0f}, 3.0);
}

TEST_CASE("numerics: block quantization: a block with nothing finite gets scale 1") {
  for_all_specs({NAN, INFINITY, -INFINITY}, 0.0);
}

TEST_CASE("numerics: block quantization: tiny amax gives a finite scale and finite dequantization") {
  const float min_sub = std::ldexp(1.0f, -149);
  for_all_specs({1e-40f, -3e-41f, min_sub, 0.0f}, static_cast<double>(1e-40f));                 // fp32 subnormals only
  for_all_specs({-min_sub}, static_cast<double>(min_sub));                                      // a single denormal
  for_all_specs({10 * kMinNormal, -kMinNormal, 3e-39f}, static_cast<double>(10 * kMinNormal));  // amax/max < 2^-126
}

TEST_CASE("numerics: block quantization: huge amax keeps scale and codes finite") {
  // With pow2 scales, x near FLT_MAX rounds (correctly) to 2^128 in FP8 units,
  // so its dequantized float32 is Inf; check_first_block skips that case.
  for_all_specs({FLT_MAX, -FLT_MAX, 1e38f, -3e37f, 1.0f}, static_cast<double>(FLT_MAX));
  for_all_specs({1e37f, -2e36f}, static_cast<double>(1e37f));
}

}  // namespace
}  // namespace fp8rl::test
