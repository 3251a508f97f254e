// Test helpers for the CPU GEMMs: random block-quantized operands and an
// independent float64 reference. Nothing here uses the library's codecs or
// layout helpers: E4M3 and BF16 are decoded from their bit fields, scale
// indices are computed from the layout rules, and BF16 rounding is done by
// comparing the two neighbours.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/backend.h"
#include "support/float_bits.h"

namespace fp8rl::test {

// OCP E4M3 (e4m3fn) from its fields: bias 7, no infinity, S.1111.111 is NaN.
inline double e4m3_value(uint8_t code) {
  const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(8 + mantissa, exponent - 10);
  return (code & 0x80) ? -magnitude : magnitude;
}

inline float bf16_value(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

// Nearest BF16 to a finite x, ties to the even one, found by comparing the
// neighbours in float64.
inline uint16_t bf16_nearest(float x) {
  const uint32_t bits = bits_of(x);
  const uint32_t down = bits & 0xFFFF0000u, up = down + 0x10000u;  // toward zero / away from zero
  const double below = std::fabs(static_cast<double>(x) - static_cast<double>(float_of(down)));
  const double above = std::fabs(static_cast<double>(float_of(up)) - static_cast<double>(x));
  if (below < above || (below == above && ((down >> 16) & 1u) == 0)) return static_cast<uint16_t>(down >> 16);
  return static_cast<uint16_t>(up >> 16);
}

// A block-quantized matrix that owns its codes and scales.
struct Fp8Data {
  int64_t rows = 0, cols = 0;
  BlockLayout layout = BlockLayout::tile_1x128;
  std::vector<uint8_t> codes;  // [rows, cols]
  std::vector<float> scales;   // per 1x128 tile: [rows, blocks]; per 128x128 block: [ceil(rows/128), blocks]

  int64_t blocks_per_row() const { return (cols + 127) / 128; }
  float scale_at(int64_t r, int64_t c) const {
    const int64_t scale_row = layout == BlockLayout::block_128x128 ? r / 128 : r;
    return scales[static_cast<size_t>(scale_row * blocks_per_row() + c / 128)];
  }
  Fp8Matrix view() const { return Fp8Matrix{codes.data(), scales.data(), rows, cols, layout, Fp8Format::e4m3}; }
};

// Random finite codes (every non-NaN code, subnormals included) and random
// positive scales spanning a few binades.
inline Fp8Data random_fp8(int64_t rows, int64_t cols, BlockLayout layout, std::mt19937& rng) {
  Fp8Data d;
  d.rows = rows;
  d.cols = cols;
  d.layout = layout;
  d.codes.resize(static_cast<size_t>(rows * cols));
  for (uint8_t& code : d.codes) {
    do code = static_cast<uint8_t>(rng() & 0xFF);
    while ((code & 0x7F) == 0x7F);
  }
  const int64_t scale_rows = layout == BlockLayout::block_128x128 ? (rows + 127) / 128 : rows;
  d.scales.resize(static_cast<size_t>(scale_rows * d.blocks_per_row()));
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-12, 2);
  for (float& s : d.scales) s = std::ldexp(mantissa(rng), exponent(rng));
  return d;
}

// Rows [r0, r0 + count) of a 1x128-tiled matrix as their own matrix.
inline Fp8Data slice_rows(const Fp8Data& d, int64_t r0, int64_t count) {
  Fp8Data s = d;
  s.rows = count;
  s.codes.assign(d.codes.begin() + r0 * d.cols, d.codes.begin() + (r0 + count) * d.cols);
  s.scales.assign(d.scales.begin() + r0 * d.blocks_per_row(), d.scales.begin() + (r0 + count) * d.blocks_per_row());
  return s;
}

// Each element as the library must see it: the FP8 value times its scale,
// rounded once to float (the float64 product is exact: 4 + 24 bits).
inline std::vector<float> dequantize_reference(const Fp8Data& d) {
  std::vector<float> out(static_cast<size_t>(d.rows * d.cols));
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t c = 0; c < d.cols; ++c)
      out[static_cast<size_t>(r * d.cols + c)] = static_cast<float>(
          e4m3_value(d.codes[static_cast<size_t>(r * d.cols + c)]) * static_cast<double>(d.scale_at(r, c)));
  return out;
}

inline std::vector<float> bf16_reference(const std::vector<uint16_t>& bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = bf16_value(bits[i]);
  return out;
}

struct Reference {
  std::vector<double> value;  // [M, N] float64 dot products
  std::vector<double> scale;  // [M, N] sum_k |a_k w_k|, for the error bound
};

inline Reference reference_gemm(const std::vector<float>& a, const std::vector<float>& w, int64_t m, int64_t n,
                                int64_t k) {
  Reference ref{std::vector<double>(static_cast<size_t>(m * n)), std::vector<double>(static_cast<size_t>(m * n))};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double product = static_cast<double>(a[static_cast<size_t>(i * k + p)]) *
                               static_cast<double>(w[static_cast<size_t>(j * k + p)]);
        sum += product;
        magnitude += std::fabs(product);
      }
      ref.value[static_cast<size_t>(i * n + j)] = sum;
      ref.scale[static_cast<size_t>(i * n + j)] = magnitude;
    }
  return ref;
}

// FP32 error bound of the kernels' contract against the float64 product of
// the (rounded) dequantized inputs: a lane adds ceil(K/16) products with one
// rounding each; each FP8 block adds the rounding of its scale product and of
// its promotion; four tree levels add one each; the reference's own
// dequantization rounds each input once. Every rounding is at most 2^-24
// relative to a partial sum bounded by sum |a_k w_k|.
inline double error_bound(int64_t k, double magnitude) {
  const double roundings = static_cast<double>((k + 15) / 16 + 2 * ((k + 127) / 128) + 4 + 2);
  return 1.01 * roundings * std::ldexp(magnitude, -24) + 1e-30;
}

// Index of the first element whose bits differ, or -1.
template <class T>
int64_t first_bit_difference(const std::vector<T>& x, const std::vector<T>& y) {
  if (x.size() != y.size()) return 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::memcmp(&x[i], &y[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace fp8rl::test
