// The portable GEMM kernels: plain C++ with std::fma, the reference every SIMD
// table must match bit for bit, and the fallback on CPUs without AVX2.
#include <cmath>

#include "../common/bf16_codec.h"
#include "../common/block_scale.h"
#include "gemm_microkernel.h"

namespace fp8rl::cpu {
namespace {

struct Portable {
  using V = float;
  static constexpr int kWidth = 1;
  static constexpr int kMaxRows = 2;
  static constexpr int cols_for_rows(int rows) { return rows == 1 ? 4 : 2; }

  static V zero() { return 0.0f; }
  static V load(const float* p) { return *p; }
  static V load_operand(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }

  static float reduce_lanes(const float (&lane)[kGemmLanes]) {
    float s8[8], s4[4];
    for (int j = 0; j < 8; ++j) s8[j] = lane[j] + lane[j + 8];
    for (int j = 0; j < 4; ++j) s4[j] = s8[j] + s8[j + 4];
    const float s2_0 = s4[0] + s4[2], s2_1 = s4[1] + s4[3];
    return s2_0 + s2_1;
  }

  template <int C>
  static void reduce(const V (&acc)[C][kGemmLanes], float* out) {
    for (int t = 0; t < C; ++t) out[t] = reduce_lanes(acc[t]);
  }

  static void decode_fp8_16(const uint8_t* codes, float scale, float* out) {
    for (int t = 0; t < kGemmLanes; ++t) out[t] = dequantize_value(codes[t], scale, Fp8Format::e4m3);
  }

  static void decode_bf16_16(const uint16_t* bits, float* out) {
    for (int t = 0; t < kGemmLanes; ++t) out[t] = bf16_decode(bits[t]);
  }

  static V broadcast(float x) { return x; }
  // fp8_decode(code) * 2^-8 is exact (the smallest magnitude is 2^-9).
  static void decode_fp8_16_times(const uint8_t* codes, V factor, V* out) {
    for (int t = 0; t < kGemmLanes; ++t) out[t] = (fp8_decode(codes[t], Fp8Format::e4m3) * 0x1p-8f) * factor;
  }
  static void decode_bf16_16_to(const uint16_t* bits, V* out) { decode_bf16_16(bits, out); }
};

constexpr GemmKernels kPortableKernels = gemm::make_gemm_kernels<Portable>(SimdLevel::portable);

}  // namespace

const GemmKernels& portable_gemm_kernels() { return kPortableKernels; }

const GemmKernels& gemm_kernels(SimdLevel level) {
#if defined(__x86_64__)
  if (level == SimdLevel::avx512) return avx512_gemm_kernels();
  if (level == SimdLevel::avx2) return avx2_gemm_kernels();
#endif
  (void)level;
  return portable_gemm_kernels();
}

}  // namespace fp8rl::cpu
