// The CPU GEMM kernels, written once as templates over an instruction set.
//
// The contract (docs/numerics.md, "CPU GEMM"): every instruction set
// computes each output c = sum_k a[k] w[k] with these bits. K is
// zero-padded to a multiple of 32; a[k], w[k] are BF16 values (for FP8: the
// E4M3 codes' own values, unscaled, which BF16 holds exactly).
//   Lane j (0..15) owns, in every group of 32 consecutive k starting at
//   g, the pair k = g + 2j (even) and g + 2j + 1 (odd), and takes, groups in
//   increasing g,
//       lane = dot2(lane) = F(F(lane + a[odd] w[odd]) + a[even] w[even])
//   where F(x) rounds the exact x to FP32, nearest-even, flushing a result
//   below 2^-126 in magnitude (judged after rounding) to zero of its sign,
//   and every operand below 2^-126 reads as zero of its sign (FTZ and DAZ).
//   That is VDPBF16PS, one lane.
//   BF16: the lanes start at +0 and run over all of K.
//   FP8: per K block b of 128 (the last one may be shorter), a block lane
//   p_j starts at +0 and runs over the block's groups; then
//       lane_j = F(p_j * s_b + lane_j),   s_b = F(scale_a[b] * scale_w[b]),
//   the promotion of DeepGEMM and cuBLASLt (one FMA, FTZ/DAZ as above).
//   Last, the 16 lanes are added as a tree, each add F(x + y):
//       s8[j] = lane[j] + lane[j+8], s4[j] = s8[j] + s8[j+4],
//       s2[j] = s4[j] + s4[j+2],     c = s2[0] + s2[1].
// Nothing depends on M, N, the tiling, the thread count or the vector width.
//
// An instruction set is a struct `Isa` with
//   using V;                         // a vector of kWidth FP32 lanes (kWidth divides 16)
//   using E;                         // a packed element: uint16_t (BF16 bits) or float
//   using P;                         // kWidth lanes' pairs: what dot2 reads of one operand
//   using FloatMode;                 // RAII: the FP environment the contract needs
//   static constexpr int kWidth, kMaxRows, kRowTileBf16, kRowTileFp8;  // rows per single-row tile
//   static constexpr int cols_for_rows(int rows);  // W rows per micro-tile
//   static V zero(); static V load(const float*); static void store(float*, V);
//   static V broadcast(float);
//   static V dot2(V lanes, P a, P w);           // the step above, lanes h*kWidth..
//   static V fma(V a, V b, V c);                // F(a * b + c)
//   static V mul(V a, V b);                     // F(a * b)
//   static P load_pair(const E* group, int h);  // from a packed group of 32 elements
//   static void store_pair(E* group, int h, P);
//   using Tables; static Tables tables();       // what widening codes needs, loaded once per call
//   static P widen(const Tables&, const uint16_t* bits, int h);  // from 32 BF16 bits in K order
//   static P widen(const Tables&, const uint8_t* codes, int h);  // from 32 E4M3 codes in K order
//   static void decode_e4m3_32(const Tables&, const uint8_t* codes, float* out);  // out [32] = values
//   template <int C> static void reduce(const V (&lanes)[C][16 / kWidth], float* out);
//
// Only the kernel translation units include this header, each with its Isa
// in an anonymous namespace, so every instantiation has internal linkage and
// no code compiled for AVX-512 can be picked by the linker for a baseline
// caller. For the same reason nothing here calls a non-template inline function.
#pragma once

#include <cstdint>
#include <cstring>

#include "gemm_kernels.h"

#if defined(__clang__)
#define FP8RL_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define FP8RL_UNROLL _Pragma("GCC unroll 16")
#else
#define FP8RL_UNROLL
#endif

#if defined(__GNUC__)
#define FP8RL_PREFETCH(address) __builtin_prefetch(address)
#define FP8RL_NOINLINE [[gnu::noinline]]
#else
#define FP8RL_PREFETCH(address) ((void)(address))
#define FP8RL_NOINLINE
#endif

namespace fp8rl::cpu::gemm {

template <class Isa>
constexpr int kParts = static_cast<int>(kGemmLanes) / Isa::kWidth;

// One micro-tile's accumulators: [tile outputs][parts of the 16 lanes].
template <class Isa, int T>
struct Lanes {
  typename Isa::V v[T][kParts<Isa>];

  void clear() {
    FP8RL_UNROLL for (int t = 0; t < T; ++t) FP8RL_UNROLL for (int h = 0; h < kParts<Isa>; ++h) v[t][h] =
        Isa::zero();
  }
  // v[t] = F(block[t] * scale(t) + v[t]): the FP8 promotion; scale(t) is
  // s_b of output t in every lane.
  template <class Scale>
  void promote(const Lanes& block, Scale scale) {
    FP8RL_UNROLL for (int t = 0; t < T; ++t) {
      const typename Isa::V s = scale(t);
      FP8RL_UNROLL for (int h = 0; h < kParts<Isa>; ++h) v[t][h] = Isa::fma(block.v[t][h], s, v[t][h]);
    }
  }
};

// The K range [k_begin, k_end) in steps: for BF16 one step; for FP8 one per
// block of 128, each step accumulating into a fresh block lane set that is
// then promoted with that block's scale product. step(lanes, g_begin, g_end)
// runs the groups; scales(b) gives a callable t -> s_b of tile output t (as
// a vector), made once per block so that it can broadcast each row's scale once.
template <class Isa, int T, bool kScaled, class Step, class Scale>
void accumulate(Lanes<Isa, T>& lanes, int64_t k_begin, int64_t k_end, Step step, Scale scale) {
  if constexpr (!kScaled) {
    step(lanes, k_begin, k_end);
  } else {
    for (int64_t b0 = k_begin; b0 < k_end; b0 += kQuantBlock) {
      Lanes<Isa, T> block;
      block.clear();
      step(block, b0, k_end - b0 < kQuantBlock ? k_end : b0 + kQuantBlock);
      lanes.promote(block, scale(b0 / kQuantBlock));
    }
  }
}

// One depth chunk [k_begin, k_end) of out [MR, NR] = a [MR, kp] . w [NR, kp]^T.
// The lanes carry over between chunks through `spill` [MR * NR, 16],
// unchanged, so chunking never alters the order: the first chunk starts from
// zero, the last one reduces into out.
template <class Isa, int MR, int NR, bool kScaled>
void micro_kernel(const typename Isa::E* a, PackedScales a_scales, const typename Isa::E* w, PackedScales w_scales,
                  int64_t kp, int64_t k_begin, int64_t k_end, float* spill, bool first, bool last, float* out) {
  constexpr int H = kParts<Isa>;
  Lanes<Isa, MR * NR> lanes;
  FP8RL_UNROLL for (int t = 0; t < MR * NR; ++t) FP8RL_UNROLL for (int h = 0; h < H; ++h) {
    lanes.v[t][h] = first ? Isa::zero() : Isa::load(spill + t * kGemmLanes + h * Isa::kWidth);
  }
  const auto step = [&](Lanes<Isa, MR * NR>& into, int64_t g_begin, int64_t g_end) {
    for (int64_t k = g_begin; k < g_end; k += kGemmGroup) FP8RL_UNROLL for (int h = 0; h < H; ++h) {
        typename Isa::P av[MR];
        FP8RL_UNROLL for (int i = 0; i < MR; ++i) av[i] = Isa::load_pair(a + i * kp + k, h);
        FP8RL_UNROLL for (int j = 0; j < NR; ++j) {
          const typename Isa::P wv = Isa::load_pair(w + j * kp + k, h);
          FP8RL_UNROLL for (int i = 0; i < MR; ++i) into.v[i * NR + j][h] = Isa::dot2(into.v[i * NR + j][h], av[i], wv);
        }
      }
  };
  const auto scale = [&](int64_t b) {
    typename Isa::V sa[MR], sw[NR];
    FP8RL_UNROLL for (int i = 0; i < MR; ++i) sa[i] = Isa::broadcast(a_scales.scales[i * a_scales.blocks + b]);
    FP8RL_UNROLL for (int j = 0; j < NR; ++j) sw[j] = Isa::broadcast(w_scales.scales[j * w_scales.blocks + b]);
    return [sa, sw](int t) { return Isa::mul(sa[t / NR], sw[t % NR]); };
  };
  accumulate<Isa, MR * NR, kScaled>(lanes, k_begin, k_end, step, scale);
  if (last) return Isa::template reduce<MR * NR>(lanes.v, out);
  FP8RL_UNROLL for (int t = 0; t < MR * NR; ++t) FP8RL_UNROLL for (int h = 0; h < H; ++h) {
    Isa::store(spill + t * kGemmLanes + h * Isa::kWidth, lanes.v[t][h]);
  }
}

// Scales of `rows` rows starting at `row`.
template <class Isa>
PackedScales scales_from(PackedScales s, int64_t row) {
  return s.scales ? PackedScales{s.scales + row * s.blocks, s.blocks} : s;
}

// c [MR, n] = a [MR, kp] . w [n, kp]^T, one micro-tile of NR W rows at a time.
// Depth chunks keep the A rows of a chunk in L1 while the panel streams past
// them, also for long K; `spill` holds [MR * n rounded up to NR, 16] floats.
template <class Isa, int MR, bool kScaled>
void multiply_rows(const typename Isa::E* a, PackedScales a_scales, const typename Isa::E* w, int64_t n,
                   PackedScales w_scales, int64_t kp, float* c, int64_t ldc, float* spill) {
  constexpr int NR = Isa::cols_for_rows(MR);
  const bool chunked = kp > kGemmDepthChunk;  // otherwise `spill` is not used (and may be null)
  for (int64_t k0 = 0; k0 < kp; k0 += kGemmDepthChunk) {
    const int64_t k1 = kp - k0 < kGemmDepthChunk ? kp : k0 + kGemmDepthChunk;
    const bool first = k0 == 0, last = k1 == kp;
    for (int64_t j = 0; j < n; j += NR) {
      float tile[MR * NR];  // [MR, NR]
      float* tile_spill = chunked ? spill + j * MR * kGemmLanes : nullptr;
      micro_kernel<Isa, MR, NR, kScaled>(a, a_scales, w + j * kp, scales_from<Isa>(w_scales, j), kp, k0, k1, tile_spill,
                                         first, last, tile);
      if (!last) continue;
      if (n - j >= NR) {  // a whole tile: a fixed-size copy compiles to a few vector moves
        FP8RL_UNROLL for (int i = 0; i < MR; ++i) FP8RL_UNROLL for (int jj = 0; jj < NR; ++jj) {
          c[i * ldc + j + jj] = tile[i * NR + jj];
        }
        continue;
      }
      for (int i = 0; i < MR; ++i)
        for (int64_t jj = 0; jj < n - j; ++jj) c[i * ldc + j + jj] = tile[i * NR + jj];
    }
  }
}

// The last m < kMaxRows rows, with a micro-tile of exactly that many rows.
template <class Isa, int R, bool kScaled>
void multiply_remaining_rows(int64_t m, const typename Isa::E* a, PackedScales a_scales, const typename Isa::E* w,
                             int64_t n, PackedScales w_scales, int64_t kp, float* c, int64_t ldc, float* spill) {
  if constexpr (R >= 1) {
    if (m == R) return multiply_rows<Isa, R, kScaled>(a, a_scales, w, n, w_scales, kp, c, ldc, spill);
    multiply_remaining_rows<Isa, R - 1, kScaled>(m, a, a_scales, w, n, w_scales, kp, c, ldc, spill);
  }
}

template <class Isa, bool kScaled>
void multiply_block_in(const typename Isa::E* a, int64_t m, PackedScales a_scales, const typename Isa::E* w, int64_t n,
                       PackedScales w_scales, int64_t kp, float* c, int64_t ldc, float* spill) {
  constexpr int MR = Isa::kMaxRows;
  int64_t i = 0;
  for (; i + MR <= m; i += MR)
    multiply_rows<Isa, MR, kScaled>(a + i * kp, scales_from<Isa>(a_scales, i), w, n, w_scales, kp, c + i * ldc, ldc, spill);
  multiply_remaining_rows<Isa, MR - 1, kScaled>(m - i, a + i * kp, scales_from<Isa>(a_scales, i), w, n, w_scales, kp,
                                                c + i * ldc, ldc, spill);
}

template <class Isa>
FP8RL_NOINLINE void multiply_block_body(const void* a, int64_t m, PackedScales a_scales, const void* w, int64_t n,
                                        PackedScales w_scales, int64_t kp, float* c, int64_t ldc, float* spill) {
  using E = typename Isa::E;
  const auto* pa = static_cast<const E*>(a);
  const auto* pw = static_cast<const E*>(w);
  if (a_scales.scales) return multiply_block_in<Isa, true>(pa, m, a_scales, pw, n, w_scales, kp, c, ldc, spill);
  multiply_block_in<Isa, false>(pa, m, a_scales, pw, n, w_scales, kp, c, ldc, spill);
}

// Entry points set the FP environment, then call a function the compiler
// cannot inline, so that no arithmetic is moved across the switch.
template <class Isa>
void multiply_block(const void* a, int64_t m, PackedScales a_scales, const void* w, int64_t n, PackedScales w_scales,
                    int64_t kp, float* c, int64_t ldc, float* spill) {
  [[maybe_unused]] const typename Isa::FloatMode mode;
  multiply_block_body<Isa>(a, m, a_scales, w, n, w_scales, kp, c, ldc, spill);
}

// Rows [row_begin, row_end) of a row-major source of `cols` Codes per row,
// packed: out [rows, kp] elements, zero past cols.
template <class Isa, class Code>
void pack_rows(const Code* source, int64_t cols, int64_t row_begin, int64_t row_end, void* out, int64_t kp) {
  using E = typename Isa::E;
  const int64_t full = cols / kGemmGroup * kGemmGroup;
  const typename Isa::Tables tables = Isa::tables();
  for (int64_t r = row_begin; r < row_end; ++r) {
    const Code* row = source + r * cols;
    E* packed = static_cast<E*>(out) + (r - row_begin) * kp;
    for (int64_t k = 0; k < full; k += kGemmGroup)
      FP8RL_UNROLL for (int h = 0; h < kParts<Isa>; ++h) Isa::store_pair(packed + k, h, Isa::widen(tables, row + k, h));
    if (full == kp) continue;
    Code tail[kGemmGroup] = {};
    std::memcpy(tail, row + full, static_cast<size_t>(cols - full) * sizeof(Code));
    FP8RL_UNROLL for (int h = 0; h < kParts<Isa>; ++h) Isa::store_pair(packed + full, h, Isa::widen(tables, tail, h));
  }
}

template <class Isa>
void pack_fp8_rows(const Fp8Matrix& matrix, int64_t row_begin, int64_t row_end, void* out, int64_t kp) {
  pack_rows<Isa>(matrix.codes, matrix.cols, row_begin, row_end, out, kp);
}

template <class Isa>
void pack_bf16_rows(const uint16_t* matrix, int64_t cols, int64_t row_begin, int64_t row_end, void* out, int64_t kp) {
  pack_rows<Isa>(matrix, cols, row_begin, row_end, out, kp);
}

// c [row_end - row_begin] = a [kp] . W [row_begin, row_end)^T for a single
// row of A, widening W group by group into registers: with one row a packed
// panel would be written and read back for a single dot2 per element. W rows
// are `cols` Codes apart; rows past row_end repeat the last row (their
// results are dropped); row_scales(r) gives row r's block scales (FP8). While
// a tile streams, the rows of the next one are prefetched at the same depth,
// so that W arrives at memory bandwidth also for the short rows of small
// matrices, where the hardware prefetchers barely ramp up. The lanes follow
// micro_kernel, so the bits are multiply_block's.
// The tile is as tall as the registers allow: the reduction at its end costs
// the same for 1 to 16 outputs, and decode's K is short (576 for SmolLM2), so
// with 4 rows it took as long as a third of the dot products. NR is the
// Isa's tile height for the code type (kRowTileFp8, kRowTileBf16).
template <class Isa, int NR, bool kScaled, class Code, class RowScales>
void multiply_row_tiles(const typename Isa::E* a, PackedScales a_scales, const Code* w, int64_t cols, int64_t row_begin,
                        int64_t row_end, int64_t kp, float* c, RowScales row_scales) {
  constexpr int H = kParts<Isa>;
  const int64_t full = cols / kGemmGroup * kGemmGroup;
  const typename Isa::Tables tables = Isa::tables();
  for (int64_t j = row_begin; j < row_end; j += NR) {
    const Code* rows[NR];
    const float* scales[NR];
    Code tails[NR][kGemmGroup];  // read only when K has a partial group
    FP8RL_UNROLL for (int t = 0; t < NR; ++t) {
      const int64_t r = j + t < row_end ? j + t : row_end - 1;
      rows[t] = w + r * cols;
      scales[t] = row_scales(r);
      if (full == kp) continue;
      std::memset(tails[t], 0, sizeof tails[t]);
      std::memcpy(tails[t], rows[t] + full, static_cast<size_t>(cols - full) * sizeof(Code));
    }
    const Code* next = j + NR < row_end ? w + (j + NR) * cols : nullptr;
    const auto step = [&](Lanes<Isa, NR>& into, int64_t g_begin, int64_t g_end) {
      for (int64_t k = g_begin; k < g_end; k += kGemmGroup) {
        const bool tail = k >= full;
        if (next && !tail && (k * static_cast<int64_t>(sizeof(Code))) % 64 == 0)
          FP8RL_UNROLL for (int t = 0; t < NR; ++t) FP8RL_PREFETCH(next + t * cols + k);
        FP8RL_UNROLL for (int h = 0; h < H; ++h) {
          const typename Isa::P av = Isa::load_pair(a + k, h);
          FP8RL_UNROLL for (int t = 0; t < NR; ++t) {
            const Code* source = tail ? tails[t] : rows[t] + k;
            into.v[t][h] = Isa::dot2(into.v[t][h], av, Isa::widen(tables, source, h));
          }
        }
      }
    };
    const auto scale = [&](int64_t b) {
      const typename Isa::V sa = Isa::broadcast(a_scales.scales[b]);
      return [&, sa, b](int t) { return Isa::mul(sa, Isa::broadcast(scales[t][b])); };
    };
    Lanes<Isa, NR> lanes;
    lanes.clear();
    accumulate<Isa, NR, kScaled>(lanes, 0, kp, step, scale);
    float tile[NR];
    Isa::template reduce<NR>(lanes.v, tile);
    const int64_t count = row_end - j < NR ? row_end - j : NR;
    for (int64_t t = 0; t < count; ++t) c[j - row_begin + t] = tile[t];
  }
}

// The scales of row r of an FP8 matrix: one per 128 columns.
template <class Isa>
const float* fp8_row_scales(const Fp8Matrix& matrix, int64_t r) {
  const int64_t blocks_per_row = (matrix.cols + kQuantBlock - 1) / kQuantBlock;
  const int64_t scale_row = matrix.layout == BlockLayout::block_128x128 ? r / kQuantBlock : r;
  return matrix.scales + scale_row * blocks_per_row;
}

template <class Isa>
FP8RL_NOINLINE void multiply_row_fp8_body(const void* a, PackedScales a_scales, const Fp8Matrix& w, int64_t row_begin,
                                          int64_t row_end, int64_t kp, float* c) {
  multiply_row_tiles<Isa, Isa::kRowTileFp8, true>(static_cast<const typename Isa::E*>(a), a_scales, w.codes, w.cols,
                                                  row_begin, row_end, kp, c,
                                                  [&w](int64_t r) { return fp8_row_scales<Isa>(w, r); });
}

template <class Isa>
void multiply_row_fp8(const void* a, PackedScales a_scales, const Fp8Matrix& w, int64_t row_begin, int64_t row_end,
                      int64_t kp, float* c) {
  [[maybe_unused]] const typename Isa::FloatMode mode;
  multiply_row_fp8_body<Isa>(a, a_scales, w, row_begin, row_end, kp, c);
}

template <class Isa>
FP8RL_NOINLINE void multiply_row_bf16_body(const void* a, const uint16_t* w, int64_t k, int64_t row_begin,
                                           int64_t row_end, int64_t kp, float* c) {
  multiply_row_tiles<Isa, Isa::kRowTileBf16, false>(static_cast<const typename Isa::E*>(a), PackedScales{}, w, k,
                                                    row_begin, row_end, kp, c,
                                                    [](int64_t) { return static_cast<const float*>(nullptr); });
}

template <class Isa>
void multiply_row_bf16(const void* a, const uint16_t* w, int64_t k, int64_t row_begin, int64_t row_end, int64_t kp,
                       float* c) {
  [[maybe_unused]] const typename Isa::FloatMode mode;
  multiply_row_bf16_body<Isa>(a, w, k, row_begin, row_end, kp, c);
}

// The table lookup: the modelling tables' decode_e4m3_32, and every table's tail.
template <class Isa>
void decode_e4m3_by_table(const uint8_t* codes, int64_t n, float* out) {
  const float* values = e4m3_code_values();
  for (int64_t i = 0; i < n; ++i) out[i] = values[codes[i]];
}

template <class Isa>
void decode_e4m3(const uint8_t* codes, int64_t n, float* out) {
  const typename Isa::Tables tables = Isa::tables();
  int64_t i = 0;
  for (; i + kGemmGroup <= n; i += kGemmGroup) Isa::decode_e4m3_32(tables, codes + i, out + i);
  decode_e4m3_by_table<Isa>(codes + i, n - i, out + i);
}

template <class Isa>
void decode_bf16(const uint16_t* bits, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t word = static_cast<uint32_t>(bits[i]) << 16;
    std::memcpy(out + i, &word, sizeof(float));
  }
}

constexpr int64_t gcd(int64_t a, int64_t b) { return b == 0 ? a : gcd(b, a % b); }

constexpr int64_t lcm(int64_t a, int64_t b) { return a / gcd(a, b) * b; }

// The least common multiple of the micro-tile widths, so that every
// micro-tile of a padded panel lies inside it, and of the single-row tiles,
// so that a single row's tasks split W into whole tiles.
template <class Isa>
constexpr int64_t panel_rows_multiple() {
  int64_t multiple = lcm(Isa::kRowTileBf16, Isa::kRowTileFp8);
  for (int rows = 1; rows <= Isa::kMaxRows; ++rows) multiple = lcm(multiple, Isa::cols_for_rows(rows));
  return multiple;
}

template <class Isa>
constexpr GemmKernels make_gemm_kernels(SimdLevel level) {
  return GemmKernels{level,
                     static_cast<int64_t>(sizeof(typename Isa::E)),
                     panel_rows_multiple<Isa>(),
                     Isa::kMaxRows,
                     &pack_fp8_rows<Isa>,
                     &pack_bf16_rows<Isa>,
                     &multiply_block<Isa>,
                     &multiply_row_fp8<Isa>,
                     &multiply_row_bf16<Isa>,
                     &decode_e4m3<Isa>,
                     &decode_bf16<Isa>};
}

}  // namespace fp8rl::cpu::gemm
