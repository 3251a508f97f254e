// Training metrics over all data-parallel ranks. Each rank's statistics are
// gathered and merged in rank order (token-weighted means, extremes, summed
// counts), so every rank reports the same numbers, and they are what one
// process would report for the union of the ranks' batches up to the order
// of summation.
#pragma once

#include "core/dist/collectives.h"
#include "core/train/mismatch_metrics.h"
#include "core/train/token_losses.h"

namespace fp8rl::train {

LossStats merge_over_ranks(dist::Collectives& collectives, const LossStats& mine);
MismatchMetrics merge_over_ranks(dist::Collectives& collectives, const MismatchMetrics& mine);

}  // namespace fp8rl::train
