// Causal attention on the CPU (kernels/common/attention_math.h gives the
// arithmetic). A work unit is one (token, kv head) pair, or a part of its
// query heads when there are too few pairs for the threads: the query heads
// of a unit decode each cached key and value row once. Every head's output is
// computed the same way whatever unit it falls in, and units never share an
// output, so any split gives the same bits.
#pragma once

#include <vector>

#include "../backend.h"
#include "gemm_kernels.h"

namespace fp8rl::cpu {

// Per-thread scratch, grown to fit the largest call seen.
struct AttentionScratch {
  std::vector<float> buffer;
};

struct AttentionPlan {
  int64_t group_splits = 1;  // parts each kv head's group of query heads is cut into
  int64_t units = 0;         // tokens * kv_heads * group_splits
};

AttentionPlan plan_attention(const AttentionArgs& args, int threads);

// Units [begin, end): unit u is part u % group_splits of (token, kv head)
// pair p = u / group_splits, token p / kv_heads, kv head p % kv_heads.
// Throws invalid_argument for a token whose key range is out of bounds.
// Cached rows are decoded with kernels' vector decoders.
void attention_units(const GemmKernels& kernels, const AttentionArgs& args, const AttentionPlan& plan, int64_t begin,
                     int64_t end, AttentionScratch& scratch);

}  // namespace fp8rl::cpu
