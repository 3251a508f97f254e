// Run-time ISA dispatch for the loop-heavy CPU kernels. A kernel's body is
// written once, marked FP8RL_ISA_BODY (always inlined); isa_dispatch<body>
// compiles it for x86-64-v4, x86-64-v3 and the baseline, and calls the
// variant this CPU supports, chosen on the first call. The kernels/common
// math is IEEE operations without contraction (-ffp-contract=off) and integer
// bit work, so every variant computes the same bits; only the speed differs.
//
// Why not target_clones (function multiversioning), which this replaces: its
// variant is chosen by an ifunc resolver that the dynamic loader runs while
// it relocates, before any sanitizer runtime is initialized. Under
// -fsanitize=thread GCC instruments that compiler-made resolver
// (__tsan_func_entry on a not yet allocated shadow stack), which cannot be
// opted out per function, and every binary crashes at start-up. A function
// pointer chosen on first use runs after start-up, so one mechanism serves
// every build, and the TSan build runs, instrumented, the very variants the
// release build runs. The choice is the one the target_clones resolver made:
// libgcc's __builtin_cpu_supports on the ISA level (CPU features and the
// register state the OS enables). Each variant is the body inlined into a
// function with that target, which is what a target_clones clone was.
#pragma once

#include <utility>

#define FP8RL_ISA_BODY [[gnu::always_inline]] static inline

namespace fp8rl::cpu {

template <auto Body>
struct IsaVariants;

template <class R, class... Args, R (*Body)(Args...)>
struct IsaVariants<Body> {
  using Fn = R (*)(Args...);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  [[gnu::target("arch=x86-64-v4")]] static R v4(Args... args) { return Body(std::forward<Args>(args)...); }
  [[gnu::target("arch=x86-64-v3")]] static R v3(Args... args) { return Body(std::forward<Args>(args)...); }
  static R baseline(Args... args) { return Body(std::forward<Args>(args)...); }

  // GCC names the ISA levels; clang 14 (the fuzz build) knows only the
  // features, so it asks for those that separate the levels' vector code.
#if defined(__clang__)
  static bool supports_v3() {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
           __builtin_cpu_supports("bmi2");
  }
  static bool supports_v4() {
    return supports_v3() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
  }
#else
  static bool supports_v3() { return __builtin_cpu_supports("x86-64-v3"); }
  static bool supports_v4() { return __builtin_cpu_supports("x86-64-v4"); }
#endif

  static Fn choose() {
    __builtin_cpu_init();  // a no-op once libgcc's constructor ran; makes a call from a constructor safe
    if (supports_v4()) return v4;
    if (supports_v3()) return v3;
    return baseline;
  }

  static R call(Args... args) {
    static const Fn chosen = choose();  // thread-safe initialization, once per kernel
    return chosen(std::forward<Args>(args)...);
  }
#else
  static R call(Args... args) { return Body(std::forward<Args>(args)...); }
#endif
};

// Calls the ISA variant of `Body` (a function marked FP8RL_ISA_BODY) that this CPU runs fastest.
template <auto Body, class... Args>
inline decltype(auto) isa_dispatch(Args&&... args) {
  return IsaVariants<Body>::call(std::forward<Args>(args)...);
}

}  // namespace fp8rl::cpu
