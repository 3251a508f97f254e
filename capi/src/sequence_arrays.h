// Checked views of the flat sequence arrays the C API takes (tokens,
// offsets, prompt lengths), shared by the rollout and training functions.
#pragma once

#include <cstdint>
#include <string>

#include "core/rollout/token_sequences.h"
#include "kernels/error.h"

namespace fp8rl::capi {

// The arrays describing a batch of sequences, checked before any is read.
inline fp8rl::rollout::TokenSequences sequences_from(const int32_t* tokens, const int64_t* offsets, int64_t count,
                                                     const char* tokens_name, const char* offsets_name,
                                                     const char* count_name) {
  fp8rl::require(tokens != nullptr, std::string(tokens_name) + " is NULL");
  fp8rl::require(offsets != nullptr, std::string(offsets_name) + " is NULL");
  fp8rl::require(count >= 1, std::string(count_name) + " is " + std::to_string(count) + "; expected >= 1");
  return fp8rl::rollout::TokenSequences{tokens, offsets, count};
}

// sum(length_i - prompt_lengths[i]) when the arrays are well formed, else -1
// (the core then reports exactly what is wrong).
inline int64_t completion_tokens(const fp8rl::rollout::TokenSequences& sequences, const int64_t* prompt_lengths) {
  if (sequences.offsets[0] != 0) return -1;
  int64_t total = 0;
  for (int64_t i = 0; i < sequences.count; ++i) {
    const int64_t length = sequences.length(i);
    if (length < 1 || prompt_lengths[i] < 1 || prompt_lengths[i] > length) return -1;
    total += length - prompt_lengths[i];
  }
  return total;
}

inline void check_capacity(int64_t capacity, int64_t needed, const char* what) {
  fp8rl::require(capacity >= needed,
                 "capacity is " + std::to_string(capacity) + " but " + what + " " + std::to_string(needed) + " tokens");
}

}  // namespace fp8rl::capi
