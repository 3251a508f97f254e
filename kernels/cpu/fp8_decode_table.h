// The 256 decoded codes of an FP8 format: one load per element instead of a
// decode, equal to fp8_decode exactly. The scalar decode is branch-free but
// does not vectorize; a table load is several times cheaper on the CPU.
#pragma once

#include "../common/fp8_codec.h"

namespace fp8rl::cpu {

struct DecodeTable {
  float values[256];
  explicit DecodeTable(Fp8Format format) {
    for (int code = 0; code < 256; ++code) values[code] = fp8_decode(static_cast<uint8_t>(code), format);
  }
};

// Built once, on first use (thread-safe).
inline const DecodeTable& e4m3_decode_table() {
  static const DecodeTable table(Fp8Format::e4m3);
  return table;
}

}  // namespace fp8rl::cpu
