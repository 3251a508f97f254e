// The CPU GEMM kernels, written once as templates over an instruction set.
//
// Reduction order (the contract every instruction set implements bit for bit):
// for one output c = sum_k a[k] * w[k], with K zero-padded to a multiple of 16
// (the padding is part of the contract: it turns a -0 lane into +0),
//   lane j (0..15) starts at +0 and accumulates, for k = j, j+16, j+32, ...
//   in increasing k, lane_j = fma(a[k], w[k], lane_j);
//   then s8[j] = lane[j] + lane[j+8]  (j < 8),
//        s4[j] = s8[j] + s8[j+4]      (j < 4),
//        s2[j] = s4[j] + s4[j+2]      (j < 2),
//        c     = s2[0] + s2[1].
// Nothing in it depends on M, N, the tiling, the thread count or the vector
// width: a 16-wide ISA keeps the lanes in one register, an 8-wide one in two,
// the portable one in sixteen scalars.
//
// An instruction set is a struct `Isa` with
//   using V;                          // a vector of kWidth floats
//   static constexpr int kWidth;      // divides 16
//   static constexpr int kMaxRows;    // A rows per micro-tile
//   static constexpr int cols_for_rows(int rows);  // W rows per micro-tile
//   static V zero(); static V load(const float*); static void store(float*, V);
//   static V load_operand(const float*);   // a load the kernel reuses from a
//       // register: compilers would fold it into every FMA as a memory operand
//   static V fma(V a, V b, V c);                 // a * b + c, one rounding
//   template <int C> static void reduce(const V (&acc)[C][16 / kWidth], float* out);
//       // out[t] = the tree above applied to the 16 lanes of acc[t]
//   static void decode_fp8_16(const uint8_t* codes, float scale, float* out);
//       // out[t] = dequantize_value(codes[t], scale, e4m3), bit for bit
//   static void decode_bf16_16(const uint16_t* bits, float* out);
//   static V broadcast(float);
//   static void decode_fp8_16_times(const uint8_t* codes, V factor, V* out);
//       // out [16 / kWidth] = (fp8_decode(codes[t], e4m3) / 256) * factor,
//       // one rounding (the quotient is exact: it is the code's FP16 value)
//   static void decode_bf16_16_to(const uint16_t* bits, V* out);  // into registers
//
// Only the kernel translation units (gemm_portable/avx2/avx512.cpp) include
// this header, each with its Isa in an anonymous namespace, so every instantiation has internal linkage and no
// code compiled for AVX-512 can be picked by the linker for a baseline caller.
// For the same reason nothing here calls a non-template inline function.
#pragma once

#include <cstdint>
#include <type_traits>

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
#else
#define FP8RL_PREFETCH(address) ((void)(address))
#endif

namespace fp8rl::cpu::gemm {

template <class Isa>
constexpr int kVectorsPerLaneSet = static_cast<int>(kGemmLanes) / Isa::kWidth;

// One depth chunk [k_begin, k_end) of out [MR, NR] = a [MR, kp] . w [NR, kp]^T
// (rows of both kp floats apart). The lanes carry over between chunks through
// `lanes` [MR * NR, 16], unchanged, so chunking never alters the order: the
// first chunk starts from zero, the last one reduces into out.
template <class Isa, int MR, int NR>
void micro_kernel(const float* a, const float* w, int64_t kp, int64_t k_begin, int64_t k_end, float* lanes, bool first,
                  bool last, float* out) {
  using V = typename Isa::V;
  constexpr int H = kVectorsPerLaneSet<Isa>;
  V acc[MR * NR][H];
  FP8RL_UNROLL for (int t = 0; t < MR * NR; ++t) FP8RL_UNROLL for (int h = 0; h < H; ++h) {
    acc[t][h] = first ? Isa::zero() : Isa::load(lanes + t * kGemmLanes + h * Isa::kWidth);
  }
  for (int64_t k = k_begin; k < k_end; k += kGemmLanes) {
    FP8RL_UNROLL for (int h = 0; h < H; ++h) {
      const int64_t at = k + h * Isa::kWidth;
      V av[MR];
      FP8RL_UNROLL for (int i = 0; i < MR; ++i) av[i] = Isa::load_operand(a + i * kp + at);
      FP8RL_UNROLL for (int j = 0; j < NR; ++j) {
        const V wv = Isa::load_operand(w + j * kp + at);
        FP8RL_UNROLL for (int i = 0; i < MR; ++i) acc[i * NR + j][h] = Isa::fma(av[i], wv, acc[i * NR + j][h]);
      }
    }
  }
  if (last) return Isa::template reduce<MR * NR>(acc, out);
  FP8RL_UNROLL for (int t = 0; t < MR * NR; ++t) FP8RL_UNROLL for (int h = 0; h < H; ++h) {
    Isa::store(lanes + t * kGemmLanes + h * Isa::kWidth, acc[t][h]);
  }
}

// c [MR, n] = a [MR, kp] . w [n, kp]^T, one micro-tile of NR W rows at a time.
// Depth chunks keep the A rows of a chunk in L1 while the panel streams past
// them, also for long K; `lanes` holds [MR * n rounded up to NR, 16] floats.
template <class Isa, int MR>
void multiply_rows(const float* a, const float* w, int64_t n, int64_t kp, float* c, int64_t ldc, float* lanes) {
  constexpr int NR = Isa::cols_for_rows(MR);
  const bool chunked = kp > kGemmDepthChunk;  // otherwise `lanes` is not used (and may be null)
  for (int64_t k0 = 0; k0 < kp; k0 += kGemmDepthChunk) {
    const int64_t k1 = kp - k0 < kGemmDepthChunk ? kp : k0 + kGemmDepthChunk;
    const bool first = k0 == 0, last = k1 == kp;
    for (int64_t j = 0; j < n; j += NR) {
      float tile[MR * NR];  // [MR, NR]
      float* tile_lanes = chunked ? lanes + j * MR * kGemmLanes : nullptr;
      micro_kernel<Isa, MR, NR>(a, w + j * kp, kp, k0, k1, tile_lanes, first, last, tile);
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
template <class Isa, int R>
void multiply_remaining_rows(int64_t m, const float* a, const float* w, int64_t n, int64_t kp, float* c, int64_t ldc,
                             float* lanes) {
  if constexpr (R >= 1) {
    if (m == R) return multiply_rows<Isa, R>(a, w, n, kp, c, ldc, lanes);
    multiply_remaining_rows<Isa, R - 1>(m, a, w, n, kp, c, ldc, lanes);
  }
}

template <class Isa>
void multiply_block(const float* a, int64_t m, const float* w, int64_t n, int64_t kp, float* c, int64_t ldc,
                    float* lanes) {
  constexpr int MR = Isa::kMaxRows;
  int64_t i = 0;
  for (; i + MR <= m; i += MR) multiply_rows<Isa, MR>(a + i * kp, w, n, kp, c + i * ldc, ldc, lanes);
  multiply_remaining_rows<Isa, MR - 1>(m - i, a + i * kp, w, n, kp, c + i * ldc, ldc, lanes);
}

// Decodes `count` < 16 elements through a zero-filled 16-element chunk, so
// that every value comes from the same vector decode as the full chunks.
template <class Isa, class Code, class Decode>
void decode_partial_chunk(const Code* codes, int64_t count, float* out, Decode decode) {
  Code chunk[kGemmLanes] = {};
  float values[kGemmLanes];
  for (int64_t t = 0; t < count; ++t) chunk[t] = codes[t];
  decode(chunk, values);
  for (int64_t t = 0; t < count; ++t) out[t] = values[t];
}

// (Templates over Isa, like everything here, only for internal linkage.)
template <class Isa>
void zero_tail(float* out, int64_t cols, int64_t ld) {
  for (int64_t k = cols; k < ld; ++k) out[k] = 0.0f;
}

// One row: codes [cols] with one scale per 128 columns -> out [ld].
template <class Isa>
void decode_fp8_row(const uint8_t* codes, const float* scales, int64_t cols, float* out, int64_t ld) {
  for (int64_t k0 = 0; k0 < cols; k0 += kQuantBlock) {
    const float scale = scales[k0 / kQuantBlock];
    const int64_t k1 = cols - k0 < kQuantBlock ? cols : k0 + kQuantBlock;
    int64_t k = k0;
    for (; k + kGemmLanes <= k1; k += kGemmLanes) Isa::decode_fp8_16(codes + k, scale, out + k);
    if (k < k1)
      decode_partial_chunk<Isa>(codes + k, k1 - k, out + k,
                                [scale](const uint8_t* c, float* o) { Isa::decode_fp8_16(c, scale, o); });
  }
  zero_tail<Isa>(out, cols, ld);
}

// The scales of row r: one per 128 columns.
template <class Isa>
const float* fp8_row_scales(const Fp8Matrix& matrix, int64_t r) {
  const int64_t blocks_per_row = (matrix.cols + kQuantBlock - 1) / kQuantBlock;
  const int64_t scale_row = matrix.layout == BlockLayout::block_128x128 ? r / kQuantBlock : r;
  return matrix.scales + scale_row * blocks_per_row;
}

template <class Isa>
void decode_fp8_rows(const Fp8Matrix& matrix, int64_t row_begin, int64_t row_end, float* out, int64_t ld) {
  for (int64_t r = row_begin; r < row_end; ++r)
    decode_fp8_row<Isa>(matrix.codes + r * matrix.cols, fp8_row_scales<Isa>(matrix, r), matrix.cols,
                        out + (r - row_begin) * ld, ld);
}

template <class Isa>
void decode_bf16_rows(const uint16_t* matrix, int64_t cols, int64_t row_begin, int64_t row_end, float* out,
                      int64_t ld) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint16_t* bits = matrix + r * cols;
    float* row = out + (r - row_begin) * ld;
    int64_t k = 0;
    for (; k + kGemmLanes <= cols; k += kGemmLanes) Isa::decode_bf16_16(bits + k, row + k);
    if (k < cols) decode_partial_chunk<Isa>(bits + k, cols - k, row + k, &Isa::decode_bf16_16);
    zero_tail<Isa>(row, cols, ld);
  }
}

// The partial chunk at the end of a row: codes [count] -> out [16], zero-padded.
template <class Isa, class Code, class Decode>
void decode_last_chunk(const Code* codes, int64_t count, float* out, Decode decode) {
  decode_partial_chunk<Isa>(codes, count, out, decode);
  for (int64_t t = count; t < kGemmLanes; ++t) out[t] = 0.0f;
}

// W rows per single-row tile: 8 FMA chains hide the FMA latency behind the
// decodes; more only add register pressure (each row has its own pointer).
template <class Isa>
constexpr int kSingleRowTile = Isa::cols_for_rows(1) < 8 ? Isa::cols_for_rows(1) : 8;

// c [row_end - row_begin] = a [kp] . W [row_begin, row_end)^T for a single
// row of A, decoding W chunk by chunk into registers: with one row a decoded
// panel would be written and read back for a single FMA per element, which
// costs more than the FMA. W rows are `cols` Codes apart; rows past row_end
// repeat the last row (their results are dropped). For each tile of NR rows,
//   last(t, out)           writes the partial chunk at full = cols rounded
//                          down to 16 (zeros past the end), as the panel
//                          decoders do, when full < kp;
//   blocks(rows, step)     calls step(k0, k1, chunk, integral_constant<C>)
//                          for consecutive column ranges covering [0, full),
//                          where chunk(t, k, w) sets w [C * H] to
//                          W[rows[t], k .. k + 16 C) and 16 C divides k1 - k0.
// The lanes follow micro_kernel, so the bits are multiply_block's. While a
// tile streams, the rows of the next one are prefetched (a line per row
// every 64 bytes), so that W arrives at memory bandwidth also for the short
// rows of small matrices, where the hardware prefetchers barely ramp up.
template <class Isa, class Code, class Last, class Blocks>
void multiply_row_tiles(const float* a, const Code* w, int64_t row_begin, int64_t row_end, int64_t cols, int64_t kp,
                        float* c, Last last, Blocks blocks) {
  using V = typename Isa::V;
  constexpr int H = kVectorsPerLaneSet<Isa>;
  constexpr int NR = kSingleRowTile<Isa>;
  constexpr int64_t kLineCodes = 64 / static_cast<int64_t>(sizeof(Code));
  const int64_t full = cols / kGemmLanes * kGemmLanes;
  for (int64_t j = row_begin; j < row_end; j += NR) {
    int64_t rows[NR];
    const Code* next[NR];  // the next tile's rows, for the prefetches
    FP8RL_UNROLL for (int t = 0; t < NR; ++t) {
      rows[t] = j + t < row_end ? j + t : row_end - 1;
      next[t] = w + (j + NR + t < row_end ? j + NR + t : row_end - 1) * cols;
    }
    // The partial last chunks are decoded first: the copies in there become
    // library calls, which would evict the accumulators from registers.
    alignas(64) float tail[NR][kGemmLanes];  // [NR, 16]
    if (full < kp) FP8RL_UNROLL for (int t = 0; t < NR; ++t) last(rows[t], tail[t]);
    V acc[NR][H];
    FP8RL_UNROLL for (int t = 0; t < NR; ++t) FP8RL_UNROLL for (int h = 0; h < H; ++h) acc[t][h] = Isa::zero();
    blocks(rows, [&](int64_t k0, int64_t k1, auto chunk, auto chunks_per_step) {
      constexpr int C = decltype(chunks_per_step)::value;
      for (int64_t k = k0; k < k1; k += C * kGemmLanes) {
        if (k % kLineCodes == 0) FP8RL_UNROLL for (int t = 0; t < NR; ++t) FP8RL_PREFETCH(next[t] + k);
        V av[C][H];
        FP8RL_UNROLL for (int u = 0; u < C; ++u) FP8RL_UNROLL for (int h = 0; h < H; ++h) {
          av[u][h] = Isa::load_operand(a + k + u * kGemmLanes + h * Isa::kWidth);
        }
        FP8RL_UNROLL for (int t = 0; t < NR; ++t) {
          V wv[C * H];
          chunk(t, k, wv);
          FP8RL_UNROLL for (int u = 0; u < C; ++u) FP8RL_UNROLL for (int h = 0; h < H; ++h) {
            acc[t][h] = Isa::fma(av[u][h], wv[u * H + h], acc[t][h]);
          }
        }
      }
    });
    if (full < kp) {
      V av[H];
      FP8RL_UNROLL for (int h = 0; h < H; ++h) av[h] = Isa::load_operand(a + full + h * Isa::kWidth);
      FP8RL_UNROLL for (int t = 0; t < NR; ++t) FP8RL_UNROLL for (int h = 0; h < H; ++h) {
        acc[t][h] = Isa::fma(av[h], Isa::load(tail[t] + h * Isa::kWidth), acc[t][h]);
      }
    }
    float tile[NR];
    Isa::template reduce<NR>(acc, tile);
    const int64_t count = row_end - j < NR ? row_end - j : NR;
    for (int64_t t = 0; t < count; ++t) c[j - row_begin + t] = tile[t];
  }
}

// Whether one multiply by scale * 256 gives the bits of dequantize_value for
// every code, i.e. of (code's FP16 value * 256) * scale: scale * 256 is then
// exact (no overflow; scale normal, so the product is not flushed under FTZ
// either) and both round the same real number once. Zero qualifies (same
// signed zero or NaN either way); NaN, subnormal and huge scales do not.
template <class Isa>
bool scale_folds(float scale) {
  const float magnitude = scale < 0.0f ? -scale : scale;
  return scale == 0.0f || (magnitude >= 0x1p-126f && magnitude <= 0x1p119f);
}

template <class Isa>
void multiply_row_fp8(const float* a, const Fp8Matrix& w, int64_t row_begin, int64_t row_end, int64_t kp, float* c) {
  using V = typename Isa::V;
  constexpr int NR = kSingleRowTile<Isa>;
  const int64_t cols = w.cols, full = cols / kGemmLanes * kGemmLanes;
  const auto row_codes = [&w](int64_t r) { return w.codes + r * w.cols; };
  const auto last = [&](int64_t r, float* out) {
    const float s = fp8_row_scales<Isa>(w, r)[full / kQuantBlock];
    decode_last_chunk<Isa>(row_codes(r) + full, cols - full, out,
                           [s](const uint8_t* chunk, float* o) { Isa::decode_fp8_16(chunk, s, o); });
  };
  const auto blocks = [&](const int64_t(&rows)[NR], auto step) {
    const uint8_t* codes[NR];
    const float* scales[NR];
    FP8RL_UNROLL for (int t = 0; t < NR; ++t) {
      codes[t] = row_codes(rows[t]);
      scales[t] = fp8_row_scales<Isa>(w, rows[t]);
    }
    for (int64_t k0 = 0; k0 < full; k0 += kQuantBlock) {
      const int64_t k1 = full - k0 < kQuantBlock ? full : k0 + kQuantBlock;
      float scale[NR];
      bool fold = true;
      FP8RL_UNROLL for (int t = 0; t < NR; ++t) {
        scale[t] = scales[t][k0 / kQuantBlock];
        fold = fold && scale_folds<Isa>(scale[t]);
      }
      constexpr std::integral_constant<int, 1> one_chunk;
      if (fold) {
        V factor[NR];
        FP8RL_UNROLL for (int t = 0; t < NR; ++t) factor[t] = Isa::broadcast(scale[t] * 256.0f);
        step(
            k0, k1, [&](int t, int64_t at, V* out) { Isa::decode_fp8_16_times(codes[t] + at, factor[t], out); },
            one_chunk);
      } else {
        step(
            k0, k1,
            [&](int t, int64_t k, V* out) {
              alignas(64) float scratch[kGemmLanes];
              Isa::decode_fp8_16(codes[t] + k, scale[t], scratch);
              FP8RL_UNROLL for (int h = 0; h < kVectorsPerLaneSet<Isa>; ++h) out[h] =
                  Isa::load(scratch + h * Isa::kWidth);
            },
            one_chunk);
      }
    }
  };
  multiply_row_tiles<Isa>(a, w.codes, row_begin, row_end, cols, kp, c, last, blocks);
}

template <class Isa>
void multiply_row_bf16(const float* a, const uint16_t* w, int64_t k, int64_t row_begin, int64_t row_end, int64_t kp,
                       float* c) {
  using V = typename Isa::V;
  constexpr int NR = kSingleRowTile<Isa>;
  const int64_t full = k / kGemmLanes * kGemmLanes;
  const auto last = [&](int64_t r, float* out) {
    decode_last_chunk<Isa>(w + r * k + full, k - full, out, &Isa::decode_bf16_16);
  };
  const auto blocks = [&](const int64_t(&rows)[NR], auto step) {
    const uint16_t* bits[NR];
    FP8RL_UNROLL for (int t = 0; t < NR; ++t) bits[t] = w + rows[t] * k;
    step(
        0, full, [&](int t, int64_t at, V* out) { Isa::decode_bf16_16_to(bits[t] + at, out); },
        std::integral_constant<int, 1>{});
  };
  multiply_row_tiles<Isa>(a, w, row_begin, row_end, k, kp, c, last, blocks);
}

constexpr int64_t gcd(int64_t a, int64_t b) { return b == 0 ? a : gcd(b, a % b); }

// The least common multiple of the micro-tile widths, so that every
// micro-tile of a padded panel lies inside it.
template <class Isa>
constexpr int64_t panel_rows_multiple() {
  int64_t multiple = 1;
  for (int rows = 1; rows <= Isa::kMaxRows; ++rows)
    multiple = multiple / gcd(multiple, Isa::cols_for_rows(rows)) * Isa::cols_for_rows(rows);
  return multiple;
}

template <class Isa>
constexpr GemmKernels make_gemm_kernels(SimdLevel level) {
  return GemmKernels{level,
                     panel_rows_multiple<Isa>(),
                     Isa::kMaxRows,
                     &decode_fp8_rows<Isa>,
                     &decode_bf16_rows<Isa>,
                     &multiply_block<Isa>,
                     &multiply_row_fp8<Isa>,
                     &multiply_row_bf16<Isa>};
}

}  // namespace fp8rl::cpu::gemm
