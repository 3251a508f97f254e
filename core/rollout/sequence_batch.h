// Whole sequences as forward passes: the one builder of a TokenBatch from
// sequences (scoring, full logits, calibration and the training pass all
// feed sequences this way) and the one rule that splits sequences into
// consecutive groups within a token bound. Generation builds its own batches:
// its tokens are a step's prefills and decodes, not whole sequences.
#pragma once

#include <cstdint>
#include <vector>

#include "core/policy/token_batch.h"
#include "core/rollout/token_sequences.h"

namespace fp8rl::rollout {

// Which fed tokens want their next-token logits.
enum class LogitRows {
  none,
  all,
  // Those that predict a completion token: positions prompt_length - 1 ..
  // length - 2 of each sequence, each with its next token as row target.
  completions,
};

// Sequences [begin, end) as one batch: each sequence at positions 0, 1, ..,
// its cache rows right after the previous sequence's fed tokens (token t of
// the batch in cache row t, which the backward pass relies on). A sequence's
// last token is fed only when feed_last (its logits predict nothing inside
// the sequence). prompt_lengths (one per sequence of `sequences`) is read
// only for LogitRows::completions.
policy::TokenBatch sequence_batch(const TokenSequences& sequences, int64_t begin, int64_t end, bool feed_last,
                                  LogitRows rows, const std::vector<int64_t>& prompt_lengths = {});

// Tokens of sequence i that sequence_batch feeds.
inline int64_t fed_tokens(const TokenSequences& sequences, int64_t i, bool feed_last) {
  return sequences.length(i) - (feed_last ? 0 : 1);
}

struct SequenceGroup {
  int64_t begin = 0, end = 0;  // sequences [begin, end)
  int64_t tokens = 0;          // fed tokens of the group
};

// Sequences [begin, end) split into consecutive groups of at most max_tokens
// fed tokens each, or of one sequence that alone exceeds them.
std::vector<SequenceGroup> group_sequences(const TokenSequences& sequences, int64_t begin, int64_t end,
                                           int64_t max_tokens, bool feed_last);

}  // namespace fp8rl::rollout
