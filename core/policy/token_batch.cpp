#include "core/policy/token_batch.h"

#include <numeric>

namespace fp8rl::policy {

void TokenBatch::clear() {
  token_ids.clear();
  positions.clear();
  key_begin.clear();
  wants_logits.clear();
  row_params.clear();
  row_targets.clear();
}

void TokenBatch::add(int32_t token, int32_t position, int64_t sequence_first_row, bool logits) {
  token_ids.push_back(token);
  positions.push_back(position);
  key_begin.push_back(sequence_first_row);
  wants_logits.push_back(logits ? 1 : 0);
}

size_t TokenBatch::wanted() const { return std::accumulate(wants_logits.begin(), wants_logits.end(), size_t{0}); }

}  // namespace fp8rl::policy
