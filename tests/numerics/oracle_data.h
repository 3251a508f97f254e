// Loads the ml_dtypes oracle (tests/oracles/fp8_oracle.py) into memory.
//
// The script runs once per test process through $FP8RL_PYTHON (set by ctest;
// falls back to "python3" when the binary is run by hand) and writes a binary
// file to a private temporary path, which is read and then deleted. Any
// failure (no Python, no numpy/ml_dtypes, short file) fails the calling test
// with the reason: a missing oracle must never look like a pass.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace fp8rl::test {

struct OracleData {
  std::vector<uint32_t> input_bits;     // float32 bit patterns
  std::vector<uint8_t> e4m3;            // ml_dtypes float8_e4m3fn codes (non-saturating)
  std::vector<uint8_t> e5m2;            // ml_dtypes float8_e5m2 codes (non-saturating)
  std::vector<uint16_t> bf16;           // ml_dtypes bfloat16 codes
  std::vector<uint8_t> category;        // origin of each input (see fp8_oracle.py CATEGORIES)
  std::array<float, 256> e4m3_table{};  // ml_dtypes decoding of every code
  std::array<float, 256> e5m2_table{};
};

// The oracle's data; fails the current doctest test case if it cannot be produced.
const OracleData& oracle_data();

// Human-readable name of a category byte, for failure messages.
const char* category_name(uint8_t category);

}  // namespace fp8rl::test
