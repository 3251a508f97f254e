// FP8RL_ISA_CLONES: compile a loop-heavy function for several x86 ISAs and pick
// one at load time (GCC/Clang function multiversioning). The kernels/common
// math is IEEE operations without contraction (-ffp-contract=off) and integer
// bit work, so every clone computes the same bits; only the speed differs.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FP8RL_ISA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FP8RL_ISA_CLONES
#endif
