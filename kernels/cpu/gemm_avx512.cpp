// AVX-512 GEMM kernels for CPUs without AVX512_BF16 (F, BW, VL; compiled
// with those -m flags and entered only after detect_simd_level() says the
// CPU and OS support them). VDPBF16PS is modelled as in gemm_avx2.cpp: two
// FMAs under flush-to-zero on FP32 operands, packed as in gemm_portable.cpp.
#include "gemm_avx512_lanes.h"

#if defined(__x86_64__)

namespace fp8rl::cpu {
namespace {

struct Avx512 : Avx512Lanes {
  using E = float;
  struct P {
    __m512 odd, even;
  };
  // Each pair takes two registers: 4 x 2 tiles hold 8 lanes sets and, for
  // FP8, 8 block lane sets.
  static constexpr int kMaxRows = 4;
  static constexpr int kRowTileBf16 = 8;
  static constexpr int kRowTileFp8 = 8;
  static constexpr int cols_for_rows(int rows) { return rows == 1 ? 8 : rows == 2 ? 4 : 2; }

  static V dot2(V lanes, P a, P w) { return _mm512_fmadd_ps(a.even, w.even, _mm512_fmadd_ps(a.odd, w.odd, lanes)); }
  static P load_pair(const E* group, int) { return P{_mm512_loadu_ps(group), _mm512_loadu_ps(group + kGemmLanes)}; }
  static void store_pair(E* group, int, P p) {
    _mm512_storeu_ps(group, p.odd);
    _mm512_storeu_ps(group + kGemmLanes, p.even);
  }
  using Tables = const float*;  // e4m3_code_values()
  static Tables tables() { return e4m3_code_values(); }
  static void decode_e4m3_32(const Tables&, const uint8_t* codes, float* out) {
    gemm::decode_e4m3_by_table<Avx512>(codes, kGemmGroup, out);
  }
  // A 32-bit word holds a lane's pair, the even element in its low half.
  static P widen(const Tables&, const uint16_t* bits, int) {
    const __m512i words = _mm512_loadu_si512(bits);
    return P{_mm512_castsi512_ps(_mm512_and_si512(words, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)))),
             _mm512_castsi512_ps(_mm512_slli_epi32(words, 16))};
  }
  static P widen(const Tables& values, const uint8_t* codes, int) {
    const __m512i pairs = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
    return P{_mm512_i32gather_ps(_mm512_srli_epi32(pairs, 8), values, 4),
             _mm512_i32gather_ps(_mm512_and_si512(pairs, _mm512_set1_epi32(0xFF)), values, 4)};
  }
};

constexpr GemmKernels kAvx512Kernels = gemm::make_gemm_kernels<Avx512>(SimdLevel::avx512);

}  // namespace

const GemmKernels& avx512_gemm_kernels() { return kAvx512Kernels; }

}  // namespace fp8rl::cpu

#endif  // __x86_64__
