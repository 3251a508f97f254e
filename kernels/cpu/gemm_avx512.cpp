// AVX-512 GEMM kernels (F, BW, VL; compiled with those -m flags and
// entered only after detect_simd_level() says the CPU and OS support them).
#if defined(__x86_64__)

// GCC 12's AVX-512 headers trip its own -Wuninitialized (_mm512_undefined_ps
// initializes a variable from itself; GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include "gemm_microkernel.h"

namespace fp8rl::cpu {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int kWidth = 16;
  // 4 x 4 micro-tiles hold 16 accumulators; short tails trade rows for
  // columns so that a tile keeps 12-16 independent FMA chains in flight.
  // (8 x 3, 6 x 4 and 4 x 6 tiles with 24 accumulators measured no faster.)
  static constexpr int kMaxRows = 4;
  static constexpr int cols_for_rows(int rows) { return rows == 1 ? 16 : rows == 2 ? 8 : 4; }

  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_operand(const float* p) {
    V v = _mm512_loadu_ps(p);
    asm("" : "+v"(v));  // opaque: GCC would otherwise fold the load into every FMA that uses it
    return v;
  }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }

  // The reduction tree for 16 accumulators at once, as a transpose: each step
  // adds the upper half of every lane set to its lower half and packs two
  // accumulators' halves into one register. Accumulator order goes in
  // transposed (4 x 4) so that output t lands in lane t.
  template <int C>
  static void reduce(const V (&acc)[C][1], float* out) {
    static_assert(C <= 16, "one register of results");
    V v[16];
    FP8RL_UNROLL for (int t = 0; t < 16; ++t) {
      const int source = (t % 4) * 4 + t / 4;
      v[t] = source < C ? acc[source][0] : zero();
    }
    V s8[8], s4[4], s2[2];
    FP8RL_UNROLL for (int p = 0; p < 8; ++p)  // [a0..7 | b0..7] + [a8..15 | b8..15]
        s8[p] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0x44),
                              _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], 0xEE));
    FP8RL_UNROLL for (int p = 0; p < 4; ++p)  // quarters 0,2 of both + quarters 1,3 of both
        s4[p] = _mm512_add_ps(_mm512_shuffle_f32x4(s8[2 * p], s8[2 * p + 1], 0x88),
                              _mm512_shuffle_f32x4(s8[2 * p], s8[2 * p + 1], 0xDD));
    FP8RL_UNROLL for (int p = 0; p < 2; ++p)  // within each quarter: lanes 0,1 + lanes 2,3
        s2[p] = _mm512_add_ps(_mm512_shuffle_ps(s4[2 * p], s4[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_ps(s4[2 * p], s4[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    const V s1 = _mm512_add_ps(_mm512_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(3, 1, 3, 1)));
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, s1);
    for (int t = 0; t < C; ++t) out[t] = lanes[t];
  }

  // E4M3 byte s.eeee.mmm -> FP16 bits s.0eeee.mmm0000000, which is the same
  // number times 2^-8 for normals and subnormals alike; F16C widens it exactly
  // (whatever MXCSR.DAZ says: it does not apply to FP16 sources). The byte,
  // sign-extended and shifted left by 7, is s.s.eeee.mmm0000000: clearing bit
  // 14 gives those FP16 bits. NaN codes (s.1111.111) become
  // s.0111.1111.0000000 there; + 0x3E80 makes them the FP16 NaN
  // s.11111.1000000000, which widens to sign | 0x7FC00000, what fp8_decode
  // returns.
  static V decode_fp8_16_quarter(const uint8_t* codes) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
    const __m256i half = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(bytes), 7),
                                          _mm256_set1_epi16(static_cast<short>(0xBFFF)));
    const __mmask16 nan =
        _mm_cmpeq_epi8_mask(_mm_or_si128(bytes, _mm_set1_epi8(static_cast<char>(0x80))), _mm_set1_epi8(-1));
    return _mm512_cvtph_ps(_mm256_mask_add_epi16(half, nan, half, _mm256_set1_epi16(0x3E80)));
  }

  // The scale multiply is separate (not folded into 256) so the single
  // rounding matches dequantize_value for every scale.
  static void decode_fp8_16(const uint8_t* codes, float scale, float* out) {
    const __m512 value = _mm512_mul_ps(decode_fp8_16_quarter(codes), _mm512_set1_ps(256.0f));
    _mm512_storeu_ps(out, _mm512_mul_ps(value, _mm512_set1_ps(scale)));
  }

  static V broadcast(float x) { return _mm512_set1_ps(x); }
  static void decode_fp8_16_times(const uint8_t* codes, V factor, V* out) {
    out[0] = _mm512_mul_ps(decode_fp8_16_quarter(codes), factor);
  }

  static void decode_bf16_16(const uint16_t* bits, float* out) {
    const __m512i words = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits)));
    _mm512_storeu_ps(out, _mm512_castsi512_ps(_mm512_slli_epi32(words, 16)));
  }
  static void decode_bf16_16_to(const uint16_t* bits, V* out) {
    const __m512i words = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits)));
    out[0] = _mm512_castsi512_ps(_mm512_slli_epi32(words, 16));
  }
};

constexpr GemmKernels kAvx512Kernels = gemm::make_gemm_kernels<Avx512>(SimdLevel::avx512);

}  // namespace

const GemmKernels& avx512_gemm_kernels() { return kAvx512Kernels; }

}  // namespace fp8rl::cpu

#endif  // __x86_64__
