// AVX-512 GEMM kernels on VDPBF16PS (AVX512_BF16, with VBMI for the code
// widening; compiled with those -m flags and entered only after
// detect_simd_level() says the CPU and OS support them). The instruction is
// the contract's dot2 itself; packed elements are BF16 bits in K order, so
// BF16 operands need no widening at all and E4M3 codes become BF16 with three
// byte permutes per 32 codes.
#include "gemm_avx512_lanes.h"

#if defined(__x86_64__)

namespace fp8rl::cpu {
namespace {

// The byte permutation that interleaves 32 low and 32 high bytes into words.
struct Interleave {
  alignas(64) uint8_t index[64];
};
constexpr Interleave interleave_bytes() {
  Interleave t{};
  for (int i = 0; i < 32; ++i) {
    t.index[2 * i] = static_cast<uint8_t>(i);
    t.index[2 * i + 1] = static_cast<uint8_t>(64 + i);
  }
  return t;
}
constexpr Interleave kInterleave = interleave_bytes();

struct Avx512Bf16 : Avx512Lanes {
  using E = uint16_t;
  using P = __m512i;  // 32 BF16 values, lane j's pair in its 32-bit word j
  // 4 x 3 tiles: 12 lane sets, 12 block lane sets for FP8, 4 + 1 operands.
  static constexpr int kMaxRows = 4;
  static constexpr int kRowTileBf16 = 16;  // 16 lane sets; W is a memory operand of the dot2
  static constexpr int kRowTileFp8 = 8;    // 8 lane sets, 8 block lane sets, the 5 widening tables
  static constexpr int cols_for_rows(int rows) { return rows == 1 ? 12 : rows == 2 ? 6 : rows == 3 ? 4 : 3; }

  static V dot2(V lanes, P a, P w) { return _mm512_dpbf16_ps(lanes, (__m512bh)a, (__m512bh)w); }
  static P load_pair(const E* group, int) { return _mm512_loadu_si512(group); }
  static void store_pair(E* group, int, P p) { _mm512_storeu_si512(group, p); }

  // The BF16 bits of codes 0..127 as byte tables (two registers each, for
  // a 7-bit permute index) and the permutation that interleaves low and
  // high bytes into 16-bit words.
  struct Tables {
    __m512i low[2], high[2], interleave;
  };
  static Tables tables() {
    const E4m3Bf16Bytes& bytes = e4m3_bf16_bytes();
    return Tables{{_mm512_loadu_si512(bytes.low), _mm512_loadu_si512(bytes.low + 64)},
                  {_mm512_loadu_si512(bytes.high), _mm512_loadu_si512(bytes.high + 64)},
                  _mm512_load_si512(kInterleave.index)};
  }
  static P widen(const Tables&, const uint16_t* bits, int) { return _mm512_loadu_si512(bits); }
  // The permutes read 7 index bits (the magnitude); the sign goes straight
  // from the code's bit 7 to the high byte's.
  static P widen(const Tables& t, const uint8_t* codes, int) {
    const __m512i index = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
    const __m512i low = _mm512_permutex2var_epi8(t.low[0], index, t.low[1]);
    const __m512i magnitude_high = _mm512_permutex2var_epi8(t.high[0], index, t.high[1]);
    const __m512i high = _mm512_ternarylogic_epi32(magnitude_high, index, _mm512_set1_epi8(static_cast<char>(0x80)),
                                                   0xF8);  // high | (index & 0x80)
    return _mm512_permutex2var_epi8(low, t.interleave, high);
  }
  // 32 codes' values: widened to BF16 as above, then to FP32 by a shift.
  static void decode_e4m3_32(const Tables& t, const uint8_t* codes, float* out) {
    const __m512i bf16 = widen(t, codes, 0);
    const __m512i first = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(bf16));
    const __m512i second = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(bf16, 1));
    _mm512_storeu_si512(out, _mm512_slli_epi32(first, 16));
    _mm512_storeu_si512(out + 16, _mm512_slli_epi32(second, 16));
  }
};

constexpr GemmKernels kAvx512Bf16Kernels = gemm::make_gemm_kernels<Avx512Bf16>(SimdLevel::avx512_bf16);

}  // namespace

const GemmKernels& avx512_bf16_gemm_kernels() { return kAvx512Bf16Kernels; }

}  // namespace fp8rl::cpu

#endif  // __x86_64__
