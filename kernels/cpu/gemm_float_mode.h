// The FP environment of the SIMD GEMM kernels: MXCSR with flush-to-zero and
// denormals-are-zero, round to nearest even, every exception masked, which
// makes FP32 FMAs and adds compute what VDPBF16PS computes (it ignores MXCSR
// and always flushes; measured on Zen 4, see docs/numerics.md). Saved and
// restored around each kernel call, so callers keep their own environment
// and the kernels do not depend on it.
//
// In an anonymous namespace: the SIMD translation units compile it with
// their own flags (VEX-encoded vldmxcsr under AVX), so no copy may be shared.
#pragma once

#if defined(__x86_64__)
#include <xmmintrin.h>

namespace fp8rl::cpu {
namespace {

class FlushToZeroMode {
 public:
  FlushToZeroMode() : saved_(_mm_getcsr()) { _mm_setcsr(kMasked | kFlushToZero | kDenormalsAreZero); }
  ~FlushToZeroMode() { _mm_setcsr(saved_); }
  FlushToZeroMode(const FlushToZeroMode&) = delete;
  FlushToZeroMode& operator=(const FlushToZeroMode&) = delete;

 private:
  static constexpr unsigned kMasked = 0x1F80u;  // all six exception masks; rounding control 00 = nearest
  static constexpr unsigned kFlushToZero = 0x8000u;
  static constexpr unsigned kDenormalsAreZero = 0x0040u;
  unsigned saved_;
};

}  // namespace
}  // namespace fp8rl::cpu
#endif
