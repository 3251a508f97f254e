// A small counter-based random generator (splitmix64): the same numbers on
// every platform, and a stream for any (seed, step, index) without state, so
// a resumed run draws exactly the prompts the uninterrupted run would have.
#ifndef FP8RL_TOOLS_RNG_H
#define FP8RL_TOOLS_RNG_H

#include <cstdint>
#include <string>

namespace fp8rl_cli {

inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t hash_string(const std::string& text) {
  uint64_t h = 0x51ED270B27A3C5F1ull;
  for (unsigned char c : text) h = mix64(h ^ c);
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(mix64(seed)) {}
  Rng(uint64_t a, uint64_t b, uint64_t c) : state_(mix64(mix64(mix64(a) ^ b) ^ c)) {}
  uint64_t next() { return mix64(state_++); }
  // Uniform in [0, n); the modulo bias is negligible for the small n used here.
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_RNG_H
