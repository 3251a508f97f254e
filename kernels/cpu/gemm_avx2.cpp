// AVX2 GEMM kernels (with FMA; compiled with those -m flags and entered only
// after detect_simd_level() says the CPU and OS support them). The 16 lanes
// of an output live in two 8-wide registers; VDPBF16PS is modelled by two
// FMAs under MXCSR's flush-to-zero mode (gemm_float_mode.h) on operands
// widened to FP32, packed as in gemm_portable.cpp (each group's 16 odd, then
// its 16 even elements).
#if defined(__x86_64__)

#include <immintrin.h>

#include "gemm_float_mode.h"
#include "gemm_microkernel.h"

namespace fp8rl::cpu {
namespace {

struct Avx2 {
  using V = __m256;
  using E = float;
  struct P {
    __m256 odd, even;
  };
  using FloatMode = FlushToZeroMode;
  static constexpr int kWidth = 8;
  static constexpr int kMaxRows = 2;
  static constexpr int kRowTileBf16 = 4;
  static constexpr int kRowTileFp8 = 4;
  static constexpr int cols_for_rows(int rows) { return rows == 1 ? 4 : 2; }

  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V broadcast(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V dot2(V lanes, P a, P w) { return _mm256_fmadd_ps(a.even, w.even, _mm256_fmadd_ps(a.odd, w.odd, lanes)); }

  static P load_pair(const E* group, int h) {
    return P{_mm256_loadu_ps(group + h * kWidth), _mm256_loadu_ps(group + kGemmLanes + h * kWidth)};
  }
  static void store_pair(E* group, int h, P p) {
    _mm256_storeu_ps(group + h * kWidth, p.odd);
    _mm256_storeu_ps(group + kGemmLanes + h * kWidth, p.even);
  }
  using Tables = const float*;  // e4m3_code_values()
  static Tables tables() { return e4m3_code_values(); }
  static void decode_e4m3_32(const Tables&, const uint8_t* codes, float* out) {
    gemm::decode_e4m3_by_table<Avx2>(codes, kGemmGroup, out);
  }
  // A 32-bit word holds a lane's pair, the even element in its low half.
  static P widen(const Tables&, const uint16_t* bits, int h) {
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + 2 * h * kWidth));
    return P{_mm256_castsi256_ps(_mm256_and_si256(words, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)))),
             _mm256_castsi256_ps(_mm256_slli_epi32(words, 16))};
  }
  static P widen(const Tables& values, const uint8_t* codes, int h) {
    const __m256i pairs =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 2 * h * kWidth)));
    return P{_mm256_i32gather_ps(values, _mm256_srli_epi32(pairs, 8), 4),
             _mm256_i32gather_ps(values, _mm256_and_si256(pairs, _mm256_set1_epi32(0xFF)), 4)};
  }

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
};

constexpr GemmKernels kAvx2Kernels = gemm::make_gemm_kernels<Avx2>(SimdLevel::avx2);

}  // namespace

const GemmKernels& avx2_gemm_kernels() { return kAvx2Kernels; }

}  // namespace fp8rl::cpu

#endif  // __x86_64__
