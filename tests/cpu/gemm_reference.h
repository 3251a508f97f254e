// Test helpers for the CPU GEMMs: random block-quantized operands and an
// independent float64 reference. Nothing here uses the library's codecs or
// layout helpers: E4M3 and BF16 are decoded from their bit fields, scale
// indices are computed from the layout rules, and BF16 rounding is done by
// comparing the two neighbours.
#pragma once

#include <algorithm>
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

// ---------------------------------------------------------------------------
// The CPU GEMM contract (kernels/cpu/gemm_microkernel.h) as a scalar float64
// model, written from the contract's text only (no kernel code).
//
// Every contract step is F(x * y + z) (or F(x * y), F(x + y)) on FP32
// operands. Products of two FP32 values have at most 48 significant bits, so
// they are exact in float64. Each sum of two exact float64 values is done with
// TwoSum and, where it is inexact, rounded to odd (add_round_to_odd): a
// rounded-to-odd float64 (53 bits >= 24 + 2) rounds once more to the correctly
// rounded FP32, so F() is exact for any operands, not only for the narrow-range
// inputs on which the float64 sums are exact anyway (there the TwoSum error is
// zero and add_round_to_odd is plain x + y).

// x + y rounded to 53 bits, to the neighbour with an odd last bit when inexact.
inline double add_round_to_odd(double x, double y) {
  const double s = x + y;
  if (!std::isfinite(s)) return s;  // an infinite operand or NaN; FP32-range sums never overflow float64
  const double y_part = s - x;      // TwoSum (Knuth): s + error == x + y exactly
  const double error = (x - (s - y_part)) + (y - y_part);
  if (error == 0.0) return s;
  uint64_t bits;
  std::memcpy(&bits, &s, sizeof bits);
  if (bits & 1u) return s;  // the exact value lies between s and its neighbour toward error; s is the odd one
  return std::nextafter(
      s, error > 0.0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
}

// DAZ: an FP32 operand below 2^-126 in magnitude reads as zero of its sign.
inline double daz(float x) {
  return std::fabs(x) < 0x1p-126f ? std::copysign(0.0, static_cast<double>(x)) : static_cast<double>(x);
}

// F(): x (exact, or rounded to odd in float64) rounded to FP32 nearest-even as
// if the exponent were unbounded, then flushed to zero of its sign when that
// is below 2^-126 (FTZ, tininess judged after rounding).
inline float contract_round(double x) {
  if (std::isnan(x)) return std::numeric_limits<float>::quiet_NaN();
  if (x == 0.0 || std::fabs(x) >= 0x1p-126) return static_cast<float>(x);  // normal range or overflow: IEEE rounding
  // Scaled by 2^64 the value is a normal FP32 (exactly: float64 has the range),
  // so the cast rounds to 24 significant bits; scaling back is exact again.
  const double rounded = static_cast<double>(static_cast<float>(x * 0x1p64)) * 0x1p-64;
  if (std::fabs(rounded) < 0x1p-126) return x < 0.0 ? -0.0f : 0.0f;
  return static_cast<float>(rounded);  // 2^-126 itself
}

// F(a * b + c), one rounding, operands DAZ.
inline float contract_fma(float a, float b, float c) {
  return contract_round(add_round_to_odd(daz(a) * daz(b), daz(c)));  // the product is exact (<= 48 bits)
}
inline float contract_mul(float a, float b) { return contract_round(daz(a) * daz(b)); }
inline float contract_add(float a, float b) { return contract_round(add_round_to_odd(daz(a), daz(b))); }

// One lane's VDPBF16PS step: the odd pair first, then the even pair.
inline float contract_dot2(float lane, float a_odd, float w_odd, float a_even, float w_even) {
  return contract_fma(a_even, w_even, contract_fma(a_odd, w_odd, lane));
}

constexpr int64_t kContractLanes = 16;
constexpr int64_t kContractGroup = 32;
constexpr int64_t kContractBlock = 128;

// The final tree over the 16 lanes.
inline float contract_tree(const float (&lane)[kContractLanes]) {
  float s8[8], s4[4], s2[2];
  for (int j = 0; j < 8; ++j) s8[j] = contract_add(lane[j], lane[j + 8]);
  for (int j = 0; j < 4; ++j) s4[j] = contract_add(s8[j], s8[j + 4]);
  for (int j = 0; j < 2; ++j) s2[j] = contract_add(s4[j], s4[j + 2]);
  return contract_add(s2[0], s2[1]);
}

// The groups [k_begin, k_end) (multiples of 32; k >= K reads zero) of a [K]
// and w [K] into lanes [16].
template <class AValue, class WValue>
void contract_groups(AValue a, WValue w, int64_t k, int64_t k_begin, int64_t k_end, float (&lanes)[kContractLanes]) {
  for (int64_t g = k_begin; g < k_end; g += kContractGroup)
    for (int64_t j = 0; j < kContractLanes; ++j) {
      const int64_t even = g + 2 * j, odd = even + 1;
      lanes[j] = contract_dot2(lanes[j], odd < k ? a(odd) : 0.0f, odd < k ? w(odd) : 0.0f, even < k ? a(even) : 0.0f,
                               even < k ? w(even) : 0.0f);
    }
}

// c [m, n] under the contract for BF16 bits a [m, k] and w [n, k].
inline std::vector<float> contract_gemm_bf16(const std::vector<uint16_t>& a, const std::vector<uint16_t>& w, int64_t m,
                                             int64_t n, int64_t k) {
  const int64_t kp = (k + kContractGroup - 1) / kContractGroup * kContractGroup;
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float lanes[kContractLanes] = {};
      contract_groups([&](int64_t p) { return bf16_value(a[static_cast<size_t>(i * k + p)]); },
                      [&](int64_t p) { return bf16_value(w[static_cast<size_t>(j * k + p)]); }, k, 0, kp, lanes);
      c[static_cast<size_t>(i * n + j)] = contract_tree(lanes);
    }
  return c;
}

// c [a.rows, w.rows] under the contract for block-quantized a and w: raw code
// values per 128-K block, promoted with F(F(scale_a * scale_w) * p + lane).
inline std::vector<float> contract_gemm_fp8(const Fp8Data& a, const Fp8Data& w) {
  const int64_t m = a.rows, n = w.rows, k = a.cols;
  const int64_t kp = (k + kContractGroup - 1) / kContractGroup * kContractGroup;
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const auto a_code = [&](int64_t p) {
        return static_cast<float>(e4m3_value(a.codes[static_cast<size_t>(i * k + p)]));  // exact: 4 bits
      };
      const auto w_code = [&](int64_t p) {
        return static_cast<float>(e4m3_value(w.codes[static_cast<size_t>(j * k + p)]));
      };
      float lanes[kContractLanes] = {};
      for (int64_t b0 = 0; b0 < kp; b0 += kContractBlock) {
        float block[kContractLanes] = {};
        contract_groups(a_code, w_code, k, b0, std::min(b0 + kContractBlock, kp), block);
        const float s = contract_mul(a.scale_at(i, b0), w.scale_at(j, b0));
        for (int64_t l = 0; l < kContractLanes; ++l) lanes[l] = contract_fma(block[l], s, lanes[l]);
      }
      c[static_cast<size_t>(i * n + j)] = contract_tree(lanes);
    }
  return c;
}

// The bits the GEMMs store for an FP32 result x: x itself, or the canonical
// NaN 0x7FC00000.
inline uint32_t f32_output_bits(float x) { return std::isnan(x) ? 0x7FC00000u : bits_of(x); }

// The BF16 the GEMMs store for an FP32 result x: nearest even, overflowing to
// infinity past the largest BF16 (unlike bf16_nearest, which only serves
// values well inside the range); canonical NaN 0x7FC0. Distances are exact in
// float64 (both neighbours and x share x's binade, or the next one up).
inline uint16_t bf16_output_bits(float x) {
  if (std::isnan(x)) return 0x7FC0;
  const uint32_t bits = bits_of(x);
  const uint32_t down = bits & 0xFFFF0000u;  // toward zero
  if (down == bits) return static_cast<uint16_t>(bits >> 16);
  const int biased = static_cast<int>((bits >> 23) & 0xFF);
  const double low = std::fabs(static_cast<double>(float_of(down)));
  const double step = std::ldexp(1.0, (biased == 0 ? 1 : biased) - 127 - 7);  // one BF16 unit in the last place
  const double below = std::fabs(static_cast<double>(x)) - low, above = low + step - std::fabs(static_cast<double>(x));
  const bool keep = below < above || (below == above && ((down >> 16) & 1u) == 0);
  return static_cast<uint16_t>((keep ? down : down + 0x10000u) >>
                               16);  // + one unit: away from zero, into inf at the top
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
