// Float <-> bits for tests, written independently of kernels/common so that
// oracles do not share code with what they check.
#pragma once

#include <cstdint>
#include <cstring>

namespace fp8rl::test {

inline uint32_t bits_of(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

inline float float_of(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace fp8rl::test
