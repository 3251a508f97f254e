// The portable GEMM kernels: plain C++, the contract of gemm_microkernel.h
// spelled out one lane at a time (with ftz_arithmetic.h for VDPBF16PS's
// flushing), the reference every SIMD table must match bit for bit, and the
// fallback on CPUs without AVX2. Packed elements are FP32, each group split
// into its 16 odd then its 16 even elements, so that a lane's pair sits at
// group[j] and group[16 + j].
#include "../common/bf16_codec.h"
#include "fp8_decode_table.h"
#include "ftz_arithmetic.h"
#include "gemm_microkernel.h"

namespace fp8rl::cpu {

const float* e4m3_code_values() { return e4m3_decode_table().values; }

const E4m3Bf16Bytes& e4m3_bf16_bytes() {
  static const E4m3Bf16Bytes bytes = [] {
    E4m3Bf16Bytes b{};
    for (int code = 0; code < 128; ++code) {
      const uint16_t bits = bf16_encode(e4m3_decode_table().values[code]);  // exact: 4 significant bits
      b.low[code] = static_cast<uint8_t>(bits & 0xFF);
      b.high[code] = static_cast<uint8_t>(bits >> 8);
    }
    return b;
  }();
  return bytes;
}

namespace {

struct Portable {
  using V = float;
  using E = float;
  struct P {
    float odd, even;
  };
  struct FloatMode {};  // ftz_arithmetic.h does the flushing itself
  static constexpr int kWidth = 1;
  static constexpr int kMaxRows = 2;
  static constexpr int kRowTileBf16 = 4;
  static constexpr int kRowTileFp8 = 4;
  static constexpr int cols_for_rows(int rows) { return rows == 1 ? 4 : 2; }

  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V broadcast(float x) { return x; }
  static V dot2(V lane, P a, P w) { return fma_ftz(a.even, w.even, fma_ftz(a.odd, w.odd, lane)); }
  static V fma(V a, V b, V c) { return fma_ftz(a, b, c); }
  static V mul(V a, V b) { return mul_ftz(a, b); }

  static P load_pair(const E* group, int h) { return P{group[h], group[kGemmLanes + h]}; }
  static void store_pair(E* group, int h, P p) {
    group[h] = p.odd;
    group[kGemmLanes + h] = p.even;
  }
  using Tables = const float*;  // e4m3_code_values()
  static Tables tables() { return e4m3_code_values(); }
  static void decode_e4m3_32(const Tables&, const uint8_t* codes, float* out) {
    gemm::decode_e4m3_by_table<Portable>(codes, kGemmGroup, out);
  }
  static P widen(const Tables&, const uint16_t* bits, int h) { return P{bf16_decode(bits[2 * h + 1]), bf16_decode(bits[2 * h])}; }
  static P widen(const Tables& values, const uint8_t* codes, int h) {
    return P{values[codes[2 * h + 1]], values[codes[2 * h]]};
  }

  template <int C>
  static void reduce(const V (&lanes)[C][kGemmLanes], float* out) {
    for (int t = 0; t < C; ++t) {
      float s8[8], s4[4];
      for (int j = 0; j < 8; ++j) s8[j] = add_ftz(lanes[t][j], lanes[t][j + 8]);
      for (int j = 0; j < 4; ++j) s4[j] = add_ftz(s8[j], s8[j + 4]);
      out[t] = add_ftz(add_ftz(s4[0], s4[2]), add_ftz(s4[1], s4[3]));
    }
  }
};

constexpr GemmKernels kPortableKernels = gemm::make_gemm_kernels<Portable>(SimdLevel::portable);

}  // namespace

const GemmKernels& portable_gemm_kernels() { return kPortableKernels; }

const GemmKernels& gemm_kernels(SimdLevel level) {
#if defined(__x86_64__)
  if (level == SimdLevel::avx512_bf16) return avx512_bf16_gemm_kernels();
  if (level == SimdLevel::avx512) return avx512_gemm_kernels();
  if (level == SimdLevel::avx2) return avx2_gemm_kernels();
#endif
  (void)level;
  return portable_gemm_kernels();
}

}  // namespace fp8rl::cpu
