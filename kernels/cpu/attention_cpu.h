// Causal attention on the CPU (kernels/common/attention_math.h gives the
// arithmetic). A work unit is one (token, kv head) pair: the query heads that
// share a kv head decode each cached key and value row once. Units never
// share an output, so any split over threads gives the same bits.
#pragma once

#include <vector>

#include "../backend.h"

namespace fp8rl::cpu {

// Per-thread scratch, grown to fit the largest call seen.
struct AttentionScratch {
  std::vector<float> buffer;
};

int64_t attention_work_units(const AttentionArgs& args);

// Units [begin, end): unit u is token u / kv_heads, kv head u % kv_heads.
// Throws invalid_argument for a token whose key range is out of bounds.
void attention_units(const AttentionArgs& args, int64_t begin, int64_t end, AttentionScratch& scratch);

}  // namespace fp8rl::cpu
