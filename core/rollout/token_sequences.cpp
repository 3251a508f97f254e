#include "core/rollout/token_sequences.h"

namespace fp8rl::rollout {

void validate_sequences(const TokenSequences& sequences, int64_t vocab_size, int64_t max_length, const char* what) {
  const std::string name(what);
  require(sequences.count >= 1,
          name + ": the number of sequences must be >= 1, got " + std::to_string(sequences.count));
  require(sequences.tokens != nullptr, name + ": token array is NULL");
  require(sequences.offsets != nullptr, name + ": offsets array is NULL");
  require(sequences.offsets[0] == 0, name + ": offsets[0] must be 0, got " + std::to_string(sequences.offsets[0]));
  for (int64_t i = 0; i < sequences.count; ++i) {
    const int64_t length = sequences.length(i);
    require(length >= 1, name + " " + std::to_string(i) + " is empty or its offsets decrease (offsets[" +
                             std::to_string(i) + "] = " + std::to_string(sequences.offsets[i]) + ", offsets[" +
                             std::to_string(i + 1) + "] = " + std::to_string(sequences.offsets[i + 1]) + ")");
    require(length <= max_length, name + " " + std::to_string(i) + " has " + std::to_string(length) +
                                      " tokens; at most " + std::to_string(max_length) + " fit");
    const int32_t* tokens = sequences.sequence(i);
    for (int64_t t = 0; t < length; ++t) {
      require(tokens[t] >= 0 && tokens[t] < vocab_size,
              name + " " + std::to_string(i) + ", position " + std::to_string(t) + ": token id " +
                  std::to_string(tokens[t]) + " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    }
  }
}

}  // namespace fp8rl::rollout
