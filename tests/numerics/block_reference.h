// Test-side reference for block quantization: input matrices, an independent
// enumeration of the blocks of each layout (written from the layout comment in
// kernels/common/quant_layout.h, not from its functions), and a driver for
// fp8rl::cpu::quantize_units. Everything the tests compare against is computed
// here in float64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace fp8rl::test {

// A row-major [rows, cols] input held as f32 or as raw bf16 bits.
struct Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::f32;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;

  const void* data() const;
  float at(int64_t r, int64_t c) const;     // the value the quantizer sees, as float
  void set(int64_t r, int64_t c, float x);  // bf16: truncates (x must be bf16-exact to be kept exactly)
};

Matrix zeros(int64_t rows, int64_t cols, DType dtype);
// Gaussians whose magnitude varies by row, column block and element over ~50
// binades (so blocks differ in amax and small elements reach FP8 subnormals),
// with some exact +0 and -0. Deterministic in (rows, cols, dtype, seed).
Matrix random_matrix(int64_t rows, int64_t cols, DType dtype, uint64_t seed);
Matrix transpose(const Matrix& m);

struct Quantized {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
};

// Runs quantize_units over [unit_begin, unit_end) (default: all units) into
// buffers pre-filled with the given sentinels.
Quantized quantize(const Matrix& m, const QuantSpec& spec, uint8_t code_fill = 0, float scale_fill = -1.0f);
Quantized quantize_split(const Matrix& m, const QuantSpec& spec, const std::vector<int64_t>& cut_points,
                         uint8_t code_fill = 0, float scale_fill = -1.0f);

// One block (tile) of a layout: a rectangle of the input and where its scale lives.
struct Block {
  int64_t row0, nrows, col0, ncols;
  int64_t scale_pos;
};

std::vector<Block> ref_blocks(BlockLayout layout, int64_t rows, int64_t cols);
int64_t ref_scale_count(BlockLayout layout, int64_t rows, int64_t cols);
int64_t ref_code_pos(BlockLayout layout, int64_t rows, int64_t cols, int64_t r, int64_t c);

// Largest |x| over the block's finite elements, 0 if none.
double ref_block_amax(const Matrix& m, const Block& b);

// Checks a block's scale against its definition; returns "" or what is wrong.
//  fp32: scale == float(amax / max) from float64 (the floor 2^-126 applies below it);
//  pow2: a power of two, amax <= max * scale, minimal (amax > max * scale / 2) unless
//        at the documented floor 2^-126; amax == 0 -> 1 for both.
std::string check_scale(double amax, float scale, Fp8Format format, ScaleFormat scale_format);

// Checks one element's code given its block scale; returns "" or what is wrong.
//  finite x: decode(code) within half an FP8 ulp of x / scale (float64), plus the
//            2^-24 relative rounding of the float32 division the quantizer performs;
//  NaN -> a NaN code; +-Inf -> +-max (saturating) or NaN / +-Inf (non-saturating).
std::string check_element(float x, uint8_t code, float scale, const QuantSpec& spec);

const char* layout_name(BlockLayout layout);
std::string describe(const QuantSpec& spec, DType dtype, int64_t rows, int64_t cols);

// The shapes and specs every sweep covers.
struct Shape {
  int64_t rows, cols;
};
std::vector<Shape> sweep_shapes();
std::vector<QuantSpec> sweep_specs(bool both_saturation_modes);

constexpr float kMinNormal = 1.17549435e-38f;  // 2^-126, the documented scale floor

}  // namespace fp8rl::test
