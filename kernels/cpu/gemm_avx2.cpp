// AVX2 GEMM kernels (with FMA and F16C; compiled with those -m flags and
// entered only after detect_simd_level() says the CPU and OS support them).
// The 16 lanes of an output live in two 8-wide registers.
#if defined(__x86_64__)

#include <immintrin.h>

#include "gemm_microkernel.h"

namespace fp8rl::cpu {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int kWidth = 8;
  // 2 x 3 tiles: 12 accumulators, 3 operand registers, inside the 16 ymm.
  static constexpr int kMaxRows = 2;
  static constexpr int cols_for_rows(int rows) { return rows == 1 ? 6 : 3; }

  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_operand(const float* p) {
    V v = _mm256_loadu_ps(p);
    asm("" : "+x"(v));  // see gemm_avx512.cpp
    return v;
  }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }

  // Up to 8 outputs: s8 is one add of the two registers; the rest of the tree
  // runs as a transpose that packs two outputs' partial sums per register.
  // Output t = 2u + v (v = 0, 1) lands in lane 4v + u.
  static void reduce8(const V (&s8)[8], float* out, int count) {
    V s4[4], s2[2];
    for (int p = 0; p < 4; ++p)  // [a0..3 | b0..3] + [a4..7 | b4..7]
      s4[p] = _mm256_add_ps(_mm256_permute2f128_ps(s8[2 * p], s8[2 * p + 1], 0x20),
                            _mm256_permute2f128_ps(s8[2 * p], s8[2 * p + 1], 0x31));
    for (int p = 0; p < 2; ++p)  // within each half: lanes 0,1 + lanes 2,3
      s2[p] = _mm256_add_ps(_mm256_shuffle_ps(s4[2 * p], s4[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm256_shuffle_ps(s4[2 * p], s4[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    const V s1 = _mm256_add_ps(_mm256_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm256_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(3, 1, 3, 1)));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, s1);
    for (int t = 0; t < count; ++t) out[t] = lanes[(t % 2) * 4 + t / 2];
  }

  template <int C>
  static void reduce(const V (&acc)[C][2], float* out) {
    for (int g = 0; g < C; g += 8) {
      V s8[8];
      for (int t = 0; t < 8; ++t) s8[t] = g + t < C ? _mm256_add_ps(acc[g + t][0], acc[g + t][1]) : zero();
      reduce8(s8, out + g, C - g < 8 ? C - g : 8);
    }
  }

  // Same FP16 trick as the AVX-512 decoder (see gemm_avx512.cpp), with a
  // vector blend for the NaN codes and two 8-wide conversions:
  // out [2] = the 16 values times 2^-8.
  static void decode_fp8_16_quarter(const uint8_t* codes, V* out) {
    const __m256i bytes = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes)));
    const __m256i half = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(bytes, 8), 1),
                                          _mm256_set1_epi16(static_cast<short>(0xBFFF)));
    const __m256i nan = _mm256_cmpeq_epi16(_mm256_and_si256(bytes, _mm256_set1_epi16(0x7F)), _mm256_set1_epi16(0x7F));
    const __m256i nan_half = _mm256_or_si256(_mm256_and_si256(half, _mm256_set1_epi16(static_cast<short>(0x8000))),
                                             _mm256_set1_epi16(0x7E00));
    const __m256i fixed = _mm256_blendv_epi8(half, nan_half, nan);
    out[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(fixed));
    out[1] = _mm256_cvtph_ps(_mm256_extracti128_si256(fixed, 1));
  }

  static void decode_fp8_16(const uint8_t* codes, float scale, float* out) {
    V quarter[2];
    decode_fp8_16_quarter(codes, quarter);
    const __m256 offset = _mm256_set1_ps(256.0f), scales = _mm256_set1_ps(scale);
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_mul_ps(quarter[0], offset), scales));
    _mm256_storeu_ps(out + 8, _mm256_mul_ps(_mm256_mul_ps(quarter[1], offset), scales));
  }

  static V broadcast(float x) { return _mm256_set1_ps(x); }
  static void decode_fp8_16_times(const uint8_t* codes, V factor, V* out) {
    decode_fp8_16_quarter(codes, out);
    out[0] = _mm256_mul_ps(out[0], factor);
    out[1] = _mm256_mul_ps(out[1], factor);
  }

  static void decode_bf16_16(const uint16_t* bits, float* out) {
    const __m128i* source = reinterpret_cast<const __m128i*>(bits);
    const __m256i lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(source));
    const __m256i hi = _mm256_cvtepu16_epi32(_mm_loadu_si128(source + 1));
    _mm256_storeu_ps(out, _mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)));
    _mm256_storeu_ps(out + 8, _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16)));
  }
  static void decode_bf16_16_to(const uint16_t* bits, V* out) {
    const __m128i* source = reinterpret_cast<const __m128i*>(bits);
    out[0] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(source)), 16));
    out[1] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(source + 1)), 16));
  }
};

constexpr GemmKernels kAvx2Kernels = gemm::make_gemm_kernels<Avx2>(SimdLevel::avx2);

}  // namespace

const GemmKernels& avx2_gemm_kernels() { return kAvx2Kernels; }

}  // namespace fp8rl::cpu

#endif  // __x86_64__
