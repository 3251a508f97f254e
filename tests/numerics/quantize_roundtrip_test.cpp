// Quantizing values that are already representable gives them back exactly.
//
// Oracle: construction. x = decode(code) * scale is exact in float32 when the
// scale is a power of two, and within 2^-24 relative (far below half an FP8
// ulp) otherwise, so quantize_value must return the very code; the decoded
// values come from the test's own bit-field decoder. Through quantize_units,
// a block built as decode(code_i) * 2^k with one element at +-max * 2^k has
// scale exactly 2^k in both scale formats, so every code must come back.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/quantize_cpu.h"
#include "numerics/block_reference.h"
#include "numerics/fp8_reference.h"

namespace fp8rl::test {
namespace {

// Scales the library produces over a wide range of amax, both scale formats.
std::vector<float> library_scales(Fp8Format format) {
  std::vector<float> scales = {1.0f, kMinNormal};
  for (float amax : {1.0f, 448.0f, 1e-3f, 3.7e5f, 1e-30f, 1e30f, 5 * kMinNormal, 1e-40f, FLT_MAX, 0.1f})
    for (ScaleFormat sf : {ScaleFormat::fp32, ScaleFormat::pow2}) scales.push_back(block_scale(amax, format, sf));
  return scales;
}

TEST_CASE("numerics: quantize_value(dequantize_value(code)) == code for every finite code") {
  for (Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2})
    for (float scale : library_scales(format))
      for (int c = 0; c < 256; ++c) {
        const uint8_t code = static_cast<uint8_t>(c);
        if (ref_is_nan(code, format) || ref_is_inf(code, format)) continue;
        // Only values float32 can hold: with the pow2 scale of amax = FLT_MAX
        // (2^120), codes >= 256 stand for values >= 2^128.
        if (std::fabs(ref_decode(code, format) * static_cast<double>(scale)) > static_cast<double>(FLT_MAX)) continue;
        const float x = dequantize_value(code, scale, format);
        INFO(std::string(format_name(format)), " scale ", scale, " code ", c, " x ", x);
        REQUIRE(std::isfinite(x));
        CHECK(x == static_cast<float>(ref_decode(code, format) * static_cast<double>(scale)));
        CHECK(quantize_value(x, scale, format, true) == code);
        CHECK(quantize_value(x, scale, format, false) == code);
      }
}

// A random finite code of the format.
uint8_t random_finite_code(Fp8Format format, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> any(0, 255);
  for (;;) {
    const uint8_t code = static_cast<uint8_t>(any(rng));
    if (!ref_is_nan(code, format) && !ref_is_inf(code, format)) return code;
  }
}

struct Built {
  Matrix matrix;
  std::vector<uint8_t> codes;  // [rows, cols], the intended code of each element
  std::vector<int> exponent;   // per block of the layout (ref_blocks order): scale = 2^k
};

// Matrix of exactly representable values: block b holds decode(code) * 2^k_b,
// with its first element forced to +-max, so that amax = max * 2^k_b.
Built build_representable(int64_t rows, int64_t cols, DType dtype, const QuantSpec& spec, std::mt19937_64& rng) {
  Built built{zeros(rows, cols, dtype), std::vector<uint8_t>(static_cast<size_t>(rows * cols)), {}};
  const std::vector<Block> blocks = ref_blocks(spec.layout, rows, cols);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    const int k = static_cast<int>(i % 21) - 10;
    built.exponent.push_back(k);
    for (int64_t r = b.row0; r < b.row0 + b.nrows; ++r)
      for (int64_t c = b.col0; c < b.col0 + b.ncols; ++c) {
        uint8_t code = random_finite_code(spec.format, rng);
        if (r == b.row0 && c == b.col0) code = static_cast<uint8_t>((code & 0x80) | facts(spec.format).max_code);
        built.codes[static_cast<size_t>(r * cols + c)] = code;
        built.matrix.set(r, c, static_cast<float>(std::ldexp(ref_decode(code, spec.format), k)));
      }
  }
  return built;
}

TEST_CASE("numerics: quantize_units: representable blocks come back with their exact codes and scale 2^k") {
  std::mt19937_64 rng(6);
  for (DType dtype : {DType::f32, DType::bf16})
    for (const QuantSpec& spec : sweep_specs(true)) {
      const Built built = build_representable(129, 257, dtype, spec, rng);
      const Quantized q = quantize(built.matrix, spec);
      const std::vector<Block> blocks = ref_blocks(spec.layout, 129, 257);
      INFO(describe(spec, dtype, 129, 257));
      long wrong_scales = 0, wrong_codes = 0;
      for (size_t i = 0; i < blocks.size(); ++i) {
        const Block& b = blocks[i];
        wrong_scales += q.scales[static_cast<size_t>(b.scale_pos)] != std::ldexp(1.0f, built.exponent[i]);
        for (int64_t r = b.row0; r < b.row0 + b.nrows; ++r)
          for (int64_t c = b.col0; c < b.col0 + b.ncols; ++c)
            wrong_codes += q.codes[static_cast<size_t>(ref_code_pos(spec.layout, 129, 257, r, c))] !=
                           built.codes[static_cast<size_t>(r * 257 + c)];
      }
      CHECK(wrong_scales == 0);
      CHECK(wrong_codes == 0);
    }
}

}  // namespace
}  // namespace fp8rl::test
