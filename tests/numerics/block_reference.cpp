#include "numerics/block_reference.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <random>
#include <sstream>

#include "kernels/cpu/quantize_cpu.h"
#include "numerics/fp8_reference.h"

namespace fp8rl::test {

const void* Matrix::data() const {
  return dtype == DType::f32 ? static_cast<const void*>(f32.data()) : static_cast<const void*>(bf16.data());
}

float Matrix::at(int64_t r, int64_t c) const {
  const size_t i = static_cast<size_t>(r * cols + c);
  return dtype == DType::f32 ? f32[i] : float_of(static_cast<uint32_t>(bf16[i]) << 16);
}

void Matrix::set(int64_t r, int64_t c, float x) {
  const size_t i = static_cast<size_t>(r * cols + c);
  if (dtype == DType::f32)
    f32[i] = x;
  else
    bf16[i] = static_cast<uint16_t>(bits_of(x) >> 16);
}

Matrix zeros(int64_t rows, int64_t cols, DType dtype) {
  Matrix m{rows, cols, dtype, {}, {}};
  const size_t n = static_cast<size_t>(rows * cols);
  if (dtype == DType::f32)
    m.f32.assign(n, 0.0f);
  else
    m.bf16.assign(n, 0);
  return m;
}

Matrix random_matrix(int64_t rows, int64_t cols, DType dtype, uint64_t seed) {
  Matrix m = zeros(rows, cols, dtype);
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(rows * 7919 + cols));
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> element_exponent(-14, 0), pick(0, 99);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int band = static_cast<int>(((r / 128) * 7 + (c / 128) * 3 + r % 5 + c % 3) % 41) - 20;
      const int kind = pick(rng);
      const double x = std::ldexp(normal(rng), band + element_exponent(rng));
      m.set(r, c, kind < 3 ? 0.0f : kind < 4 ? -0.0f : static_cast<float>(x));
    }
  }
  return m;
}

Matrix transpose(const Matrix& m) {
  Matrix t = zeros(m.cols, m.rows, m.dtype);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) t.set(c, r, m.at(r, c));  // bf16-exact values survive set()
  return t;
}

Quantized quantize_split(const Matrix& m, const QuantSpec& spec, const std::vector<int64_t>& cut_points,
                         uint8_t code_fill, float scale_fill) {
  Quantized q;
  q.codes.assign(static_cast<size_t>(m.rows * m.cols), code_fill);
  q.scales.assign(static_cast<size_t>(ref_scale_count(spec.layout, m.rows, m.cols)), scale_fill);
  int64_t begin = 0;
  for (int64_t end : cut_points) {
    cpu::quantize_units(m.data(), m.dtype, m.rows, m.cols, spec, q.codes.data(), q.scales.data(), begin, end);
    begin = end;
  }
  return q;
}

Quantized quantize(const Matrix& m, const QuantSpec& spec, uint8_t code_fill, float scale_fill) {
  return quantize_split(m, spec, {cpu::quantize_work_units(spec.layout, m.rows)}, code_fill, scale_fill);
}

namespace {
constexpr int64_t kB = 128;
int64_t blocks_along(int64_t n) { return (n + kB - 1) / kB; }
}  // namespace

int64_t ref_scale_count(BlockLayout layout, int64_t rows, int64_t cols) {
  switch (layout) {
    case BlockLayout::tile_1x128: return rows * blocks_along(cols);
    case BlockLayout::tile_1x128_transposed: return cols * blocks_along(rows);
    case BlockLayout::block_128x128: return blocks_along(rows) * blocks_along(cols);
  }
  return -1;
}

// Scales are row-major over their own [scale rows, scale cols] grid, as documented.
std::vector<Block> ref_blocks(BlockLayout layout, int64_t rows, int64_t cols) {
  std::vector<Block> blocks;
  if (layout == BlockLayout::tile_1x128) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < blocks_along(cols); ++j)
        blocks.push_back({r, 1, j * kB, std::min(kB, cols - j * kB), r * blocks_along(cols) + j});
  } else if (layout == BlockLayout::tile_1x128_transposed) {
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t i = 0; i < blocks_along(rows); ++i)
        blocks.push_back({i * kB, std::min(kB, rows - i * kB), c, 1, c * blocks_along(rows) + i});
  } else {
    for (int64_t i = 0; i < blocks_along(rows); ++i)
      for (int64_t j = 0; j < blocks_along(cols); ++j)
        blocks.push_back(
            {i * kB, std::min(kB, rows - i * kB), j * kB, std::min(kB, cols - j * kB), i * blocks_along(cols) + j});
  }
  return blocks;
}

int64_t ref_code_pos(BlockLayout layout, int64_t rows, int64_t cols, int64_t r, int64_t c) {
  return layout == BlockLayout::tile_1x128_transposed ? c * rows + r : r * cols + c;
}

double ref_block_amax(const Matrix& m, const Block& b) {
  double amax = 0.0;
  for (int64_t r = b.row0; r < b.row0 + b.nrows; ++r)
    for (int64_t c = b.col0; c < b.col0 + b.ncols; ++c) {
      const double x = m.at(r, c);
      if (std::isfinite(x)) amax = std::max(amax, std::fabs(x));
    }
  return amax;
}

namespace {

std::string str(double x) {
  std::ostringstream out;
  out << std::hexfloat << x << " (" << std::defaultfloat << x << ")";
  return out.str();
}

bool is_normal_power_of_two(float s) {
  const uint32_t bits = bits_of(s);
  const uint32_t exponent = (bits >> 23) & 0xFF;
  return (bits >> 31) == 0 && (bits & 0x7FFFFF) == 0 && exponent >= 1 && exponent <= 254;
}

std::string check_pow2_scale(double amax, float scale, double max) {
  if (!is_normal_power_of_two(scale)) return "pow2 scale " + str(scale) + " is not a normal power of two";
  if (!(amax <= max * scale)) return "pow2 scale " + str(scale) + " lets amax " + str(amax) + " overflow";
  if (scale != kMinNormal && !(amax > max * scale / 2))
    return "pow2 scale " + str(scale) + " is not minimal for amax " + str(amax);
  return "";
}

}  // namespace

std::string check_scale(double amax, float scale, Fp8Format format, ScaleFormat scale_format) {
  const double max = facts(format).max_value;
  if (amax == 0.0) return scale == 1.0f ? "" : "amax 0 but scale " + str(scale) + " (expected 1)";
  if (scale_format == ScaleFormat::pow2) return check_pow2_scale(amax, scale, max);
  float expected = static_cast<float>(amax / max);   // one rounding of the exact quotient (53 >= 2*24+2)
  if (expected < kMinNormal) expected = kMinNormal;  // documented floor: 1/scale stays finite
  if (bits_of(scale) == bits_of(expected)) return "";
  return "fp32 scale " + str(scale) + " != float(amax/max) " + str(expected) + " for amax " + str(amax);
}

namespace {

std::string check_nonfinite(float x, uint8_t code, const QuantSpec& spec) {
  if (std::isnan(x)) return ref_is_nan(code, spec.format) ? "" : "NaN input gave a non-NaN code";
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (spec.saturate) return code == (sign | facts(spec.format).max_code) ? "" : "Inf input did not saturate to +-max";
  if (spec.format == Fp8Format::e4m3) return ref_is_nan(code, spec.format) ? "" : "Inf input: expected NaN (e4m3fn)";
  return code == (sign | 0x7C) ? "" : "Inf input: expected +-Inf code (e5m2)";
}

}  // namespace

std::string check_element(float x, uint8_t code, float scale, const QuantSpec& spec) {
  if (!std::isfinite(x)) return check_nonfinite(x, code, spec);
  if (ref_is_nan(code, spec.format) || ref_is_inf(code, spec.format))
    return "finite x " + str(x) + " gave non-finite code " + std::to_string(code);
  if (((code & 0x80) != 0) != static_cast<bool>(std::signbit(x))) return "sign of x " + str(x) + " lost";
  const double q = static_cast<double>(x) / static_cast<double>(scale);
  const double d = ref_decode(code, spec.format);
  const double bound = half_ulp(q, spec.format) + std::fabs(q) * std::ldexp(1.0, -24);
  if (std::fabs(d - q) <= bound) return "";
  return "x/scale " + str(q) + " decoded as " + str(d) + ", error above the bound " + str(bound);
}

const char* layout_name(BlockLayout layout) {
  switch (layout) {
    case BlockLayout::tile_1x128: return "1x128";
    case BlockLayout::tile_1x128_transposed: return "1x128T";
    case BlockLayout::block_128x128: return "128x128";
  }
  return "?";
}

std::string describe(const QuantSpec& spec, DType dtype, int64_t rows, int64_t cols) {
  std::ostringstream out;
  out << rows << "x" << cols << (dtype == DType::f32 ? " f32 " : " bf16 ") << layout_name(spec.layout) << " "
      << format_name(spec.format) << (spec.scale_format == ScaleFormat::pow2 ? " pow2" : " fp32-scale")
      << (spec.saturate ? " sat" : " nonsat");
  return out.str();
}

std::vector<Shape> sweep_shapes() { return {{1, 1}, {3, 130}, {129, 257}, {300, 200}, {128, 256}}; }

std::vector<QuantSpec> sweep_specs(bool both_saturation_modes) {
  std::vector<QuantSpec> specs;
  for (BlockLayout layout : {BlockLayout::tile_1x128, BlockLayout::tile_1x128_transposed, BlockLayout::block_128x128})
    for (Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2})
      for (ScaleFormat scale_format : {ScaleFormat::fp32, ScaleFormat::pow2})
        for (bool saturate : {true, false}) {
          if (!saturate && !both_saturation_modes) continue;
          QuantSpec spec;
          spec.format = format;
          spec.layout = layout;
          spec.scale_format = scale_format;
          spec.saturate = saturate;
          specs.push_back(spec);
        }
  return specs;
}

}  // namespace fp8rl::test
