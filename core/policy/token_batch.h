// The host description of the tokens of one or more forward passes
// (ModelRunner::run): prefill chunks, decode steps and training sequences alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/transformer_ops.h"

namespace fp8rl::policy {

struct TokenBatch {
  std::vector<int32_t> token_ids;     // [tokens]
  std::vector<int32_t> positions;     // [tokens] position in its sequence
  std::vector<int64_t> key_begin;     // [tokens] cache row of its sequence's position 0
  std::vector<uint8_t> wants_logits;  // [tokens] 1: the next-token logits of this token are needed
  // Inputs of what consumes the logits (sample(), token_logprobs()), one per
  // wanted token in batch order, or empty when not needed. They travel in
  // the upload of the pass that computes those logits (PassIndices), so
  // consuming the logits needs no upload of its own.
  std::vector<SamplingRow> row_params;  // [wanted]
  std::vector<int32_t> row_targets;     // [wanted]

  void clear();
  void add(int32_t token, int32_t position, int64_t sequence_first_row, bool logits);
  size_t size() const { return token_ids.size(); }
  size_t wanted() const;  // tokens that want logits
};

}  // namespace fp8rl::policy
