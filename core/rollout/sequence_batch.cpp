#include "core/rollout/sequence_batch.h"

namespace fp8rl::rollout {

policy::TokenBatch sequence_batch(const TokenSequences& sequences, int64_t begin, int64_t end, bool feed_last,
                                  LogitRows rows, const std::vector<int64_t>& prompt_lengths) {
  policy::TokenBatch batch;
  for (int64_t i = begin; i < end; ++i) {
    const int32_t* tokens = sequences.sequence(i);
    const int64_t first_row = static_cast<int64_t>(batch.size());
    const int64_t fed = fed_tokens(sequences, i, feed_last);
    for (int64_t p = 0; p < fed; ++p) {
      // The logits at position p predict token p + 1: completion tokens start at the prompt length.
      const bool completion = rows == LogitRows::completions && p + 1 >= prompt_lengths[static_cast<size_t>(i)] &&
                              p + 1 < sequences.length(i);
      const bool logits = rows == LogitRows::all || completion;
      batch.add(tokens[p], static_cast<int32_t>(p), first_row, logits);
      if (completion) batch.row_targets.push_back(tokens[p + 1]);
    }
  }
  return batch;
}

std::vector<SequenceGroup> group_sequences(const TokenSequences& sequences, int64_t begin, int64_t end,
                                           int64_t max_tokens, bool feed_last) {
  std::vector<SequenceGroup> groups;
  while (begin < end) {
    SequenceGroup group{begin, begin + 1, fed_tokens(sequences, begin, feed_last)};
    while (group.end < end && group.tokens + fed_tokens(sequences, group.end, feed_last) <= max_tokens) {
      group.tokens += fed_tokens(sequences, group.end++, feed_last);
    }
    groups.push_back(group);
    begin = group.end;
  }
  return groups;
}

}  // namespace fp8rl::rollout
