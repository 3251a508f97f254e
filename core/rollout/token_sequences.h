// A batch of token sequences in one flat array, as the C API passes them:
// sequence i is tokens[offsets[i] .. offsets[i + 1]). Borrowed, not owned.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/error.h"

namespace fp8rl::rollout {

struct TokenSequences {
  const int32_t* tokens = nullptr;
  const int64_t* offsets = nullptr;  // [count + 1], non-decreasing, offsets[0] == 0
  int64_t count = 0;

  int64_t length(int64_t i) const { return offsets[i + 1] - offsets[i]; }
  const int32_t* sequence(int64_t i) const { return tokens + offsets[i]; }
  int64_t total_tokens() const { return offsets[count]; }
};

// Throws invalid_argument naming the sequence and position: null arrays,
// count < 1, offsets not starting at 0 or decreasing, empty sequences, ids
// outside [0, vocab_size), or a sequence longer than max_length.
void validate_sequences(const TokenSequences& sequences, int64_t vocab_size, int64_t max_length, const char* what);

}  // namespace fp8rl::rollout
