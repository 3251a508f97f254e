// Run-time detection of the SIMD kernel family. The library is compiled for
// baseline x86-64, so a level counts as supported only when the CPU has every
// instruction its kernels use AND the OS saves the registers they touch
// (XCR0), which a hypervisor or kernel may withhold even when cpuid lists them.
#include "cpu_backend.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace fp8rl {
namespace {

#if defined(__x86_64__)

struct CpuidRegisters {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegisters cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegisters r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return CpuidRegisters{};
  return r;
}

// XCR0 through inline asm: the _xgetbv intrinsic would need -mxsave on this
// baseline translation unit.
uint64_t read_xcr0() {
  uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (static_cast<uint64_t>(high) << 32) | low;
}

bool has_bit(unsigned value, int bit) { return (value >> bit) & 1u; }

SimdLevel detect_x86() {
  const CpuidRegisters leaf1 = cpuid(1, 0);
  const bool osxsave = has_bit(leaf1.ecx, 27), avx = has_bit(leaf1.ecx, 28);
  const bool fma = has_bit(leaf1.ecx, 12), f16c = has_bit(leaf1.ecx, 29);
  if (!osxsave || !avx) return SimdLevel::portable;

  const uint64_t xcr0 = read_xcr0();
  const bool os_ymm = (xcr0 & 0x6u) == 0x6u;    // SSE and AVX state
  const bool os_zmm = (xcr0 & 0xE6u) == 0xE6u;  // plus opmask, ZMM_Hi256, Hi16_ZMM
  const CpuidRegisters leaf7 = cpuid(7, 0);
  const bool avx2 = has_bit(leaf7.ebx, 5);
  const bool avx512f = has_bit(leaf7.ebx, 16);
  const bool avx512bw = has_bit(leaf7.ebx, 30), avx512vl = has_bit(leaf7.ebx, 31);
  const bool avx512vbmi = has_bit(leaf7.ecx, 1);
  const bool avx512_bf16 = has_bit(cpuid(7, 1).eax, 5);

  const bool avx2_level = os_ymm && avx2 && fma && f16c;
  const bool avx512_level = avx2_level && os_zmm && avx512f && avx512bw && avx512vl;
  if (avx512_level && avx512_bf16 && avx512vbmi) return SimdLevel::avx512_bf16;
  if (avx512_level) return SimdLevel::avx512;
  if (avx2_level) return SimdLevel::avx2;
  return SimdLevel::portable;
}

#endif

}  // namespace

SimdLevel detect_simd_level() {
#if defined(__x86_64__)
  static const SimdLevel level = detect_x86();  // cpuid is slow under a hypervisor
  return level;
#else
  return SimdLevel::portable;
#endif
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::portable: return "portable";
    case SimdLevel::avx2: return "AVX2";
    case SimdLevel::avx512: return "AVX-512";
    case SimdLevel::avx512_bf16: return "AVX-512 BF16";
  }
  return "unknown";
}

}  // namespace fp8rl
