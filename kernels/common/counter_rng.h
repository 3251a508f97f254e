// Counter-based random numbers: a draw is a pure function of (key, counter),
// so a sequence's samples do not depend on which other sequences share a
// batch, on the thread that draws them, or on the device. The mixer is
// SplitMix64's finalizer (Steele, Lea and Flood 2014) applied twice, which
// passes BigCrush as a counter-based generator.
#pragma once

#include <cstdint>

#include "host_device.h"

namespace fp8rl {

FP8RL_HD uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 64 random bits for draw `counter` of the stream named by `key`.
FP8RL_HD uint64_t counter_random_bits(uint64_t key, uint64_t counter) {
  return splitmix64_mix(splitmix64_mix(key + 0x9E3779B97F4A7C15ull) ^ (counter * 0xD1B54A32D192ED03ull));
}

// Uniform in [0, 1) with 53 random bits.
FP8RL_HD double counter_uniform(uint64_t key, uint64_t counter) {
  return static_cast<double>(counter_random_bits(key, counter) >> 11) * 0x1.0p-53;
}

}  // namespace fp8rl
