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
//
// Only the kernel translation units (gemm_portable/avx2/avx512.cpp) include
// this header, each with its Isa in an anonymous namespace, so every instantiation has internal linkage and no
// code compiled for AVX-512 can be picked by the linker for a baseline caller.
// For the same reason nothing here calls a non-template inline function.
#pragma once

#include <cstdint>

#include "gemm_kernels.h"

#if defined(__clang__)
#define FP8RL_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define FP8RL_UNROLL _Pragma("GCC unroll 16")
#else
#define FP8RL_UNROLL
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

// c [row_end - row_begin] = a [kp] . W [row_begin, row_end)^T for a single
// row of A, decoding W chunk by chunk into registers: with one row a decoded
// panel would be written and read back for a single FMA per element, which
// costs more than the FMA. W has `cols` columns; decode(r, k, out) writes
// W[r, k .. k + 16) for k + 16 <= cols and decode_last(r, k, out) the partial
// chunk at k = cols rounded down (zeros past the end), exactly as the panel
// decoders do. The lanes follow micro_kernel, so the bits are multiply_block's.
template <class Isa, class Decode, class DecodeLast>
void multiply_row_decoding(const float* a, int64_t row_begin, int64_t row_end, int64_t cols, int64_t kp, float* c,
                           Decode decode, DecodeLast decode_last) {
  using V = typename Isa::V;
  constexpr int H = kVectorsPerLaneSet<Isa>;
  // W rows per tile: 8 FMA chains hide the FMA latency behind the decodes;
  // more only add register pressure (each row has its own code pointer).
  constexpr int NR = Isa::cols_for_rows(1) < 8 ? Isa::cols_for_rows(1) : 8;
  const int64_t full = cols / kGemmLanes * kGemmLanes;
  for (int64_t j = row_begin; j < row_end; j += NR) {
    // Rows past row_end repeat the last row; their results are dropped.
    const auto row = [&](int t) { return j + t < row_end ? j + t : row_end - 1; };
    // The partial last chunks are decoded first: the copies in there become
    // library calls, which would evict the accumulators from registers.
    alignas(64) float last[NR][kGemmLanes];  // [NR, 16]
    if (full < kp) FP8RL_UNROLL for (int t = 0; t < NR; ++t) decode_last(row(t), full, last[t]);
    V acc[NR][H];
    FP8RL_UNROLL for (int t = 0; t < NR; ++t) FP8RL_UNROLL for (int h = 0; h < H; ++h) acc[t][h] = Isa::zero();
    // chunk(t, scratch) returns W[row(t), k .. k + 16), decoded into scratch or not.
    const auto step = [&](int64_t k, auto chunk) {
      V av[H];
      FP8RL_UNROLL for (int h = 0; h < H; ++h) av[h] = Isa::load_operand(a + k + h * Isa::kWidth);
      FP8RL_UNROLL for (int t = 0; t < NR; ++t) {
        alignas(64) float scratch[kGemmLanes];  // [16], forwarded from the store
        const float* w = chunk(t, scratch);
        FP8RL_UNROLL for (int h = 0; h < H; ++h) acc[t][h] = Isa::fma(av[h], Isa::load(w + h * Isa::kWidth), acc[t][h]);
      }
    };
    for (int64_t k = 0; k < full; k += kGemmLanes)
      step(k, [&](int t, float* scratch) -> const float* {
        decode(row(t), k, scratch);
        return scratch;
      });
    if (full < kp) step(full, [&](int t, float*) -> const float* { return last[t]; });
    float tile[NR];
    Isa::template reduce<NR>(acc, tile);
    const int64_t count = row_end - j < NR ? row_end - j : NR;
    for (int64_t t = 0; t < count; ++t) c[j - row_begin + t] = tile[t];
  }
}

// The partial chunk at the end of a row: codes [count] -> out [16], zero-padded.
template <class Isa, class Code, class Decode>
void decode_last_chunk(const Code* codes, int64_t count, float* out, Decode decode) {
  decode_partial_chunk<Isa>(codes, count, out, decode);
  for (int64_t t = count; t < kGemmLanes; ++t) out[t] = 0.0f;
}

template <class Isa>
void multiply_row_fp8(const float* a, const Fp8Matrix& w, int64_t row_begin, int64_t row_end, int64_t kp, float* c) {
  const auto scale = [&w](int64_t r, int64_t k) { return fp8_row_scales<Isa>(w, r)[k / kQuantBlock]; };
  multiply_row_decoding<Isa>(
      a, row_begin, row_end, w.cols, kp, c,
      [&](int64_t r, int64_t k, float* out) { Isa::decode_fp8_16(w.codes + r * w.cols + k, scale(r, k), out); },
      [&](int64_t r, int64_t k, float* out) {
        const float s = scale(r, k);
        decode_last_chunk<Isa>(w.codes + r * w.cols + k, w.cols - k, out,
                               [s](const uint8_t* chunk, float* o) { Isa::decode_fp8_16(chunk, s, o); });
      });
}

template <class Isa>
void multiply_row_bf16(const float* a, const uint16_t* w, int64_t k, int64_t row_begin, int64_t row_end, int64_t kp,
                       float* c) {
  multiply_row_decoding<Isa>(
      a, row_begin, row_end, k, kp, c,
      [w, k](int64_t r, int64_t at, float* out) { Isa::decode_bf16_16(w + r * k + at, out); },
      [w, k](int64_t r, int64_t at, float* out) {
        decode_last_chunk<Isa>(w + r * k + at, k - at, out, &Isa::decode_bf16_16);
      });
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
