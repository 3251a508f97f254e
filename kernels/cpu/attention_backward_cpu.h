// The backward of causal attention on the CPU
// (kernels/common/attention_backward_math.h gives the arithmetic). A work
// unit is one kv head: it owns dq of its group of query heads and the kv
// head's columns of dk and dv, so units never share an output and each dk /
// dv element sums its contributions in one fixed order, query tokens
// ascending, then query heads ascending: any split over threads gives the
// same bits. Parallelism is therefore at most kv_heads.
#pragma once

#include <vector>

#include "../backend.h"

namespace fp8rl::cpu {

// kv heads [begin, end). Throws invalid_argument for a token whose key range
// is out of bounds (before anything is written).
void attention_backward_kv_heads(const AttentionBackwardArgs& args, int64_t begin, int64_t end,
                                 std::vector<float>& scratch);

// Checks every token's key range (check_attention_backward_keys).
void check_attention_backward_key_ranges(const AttentionBackwardArgs& args);

}  // namespace fp8rl::cpu
