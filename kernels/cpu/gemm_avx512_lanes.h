// What the two AVX-512 GEMM tables share: the 16 lanes of an output in one
// register, the promotion FMA, and the reduction tree as a transpose. In an
// anonymous namespace, like gemm_float_mode.h: each translation unit keeps
// its own copy, compiled with its own flags.
#pragma once

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

#include "gemm_float_mode.h"
#include "gemm_microkernel.h"

namespace fp8rl::cpu {
namespace {

struct Avx512Lanes {
  using V = __m512;
  using FloatMode = FlushToZeroMode;
  static constexpr int kWidth = 16;

  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V broadcast(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }

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
};

}  // namespace
}  // namespace fp8rl::cpu

#endif  // __x86_64__
