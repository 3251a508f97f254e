// What training steps did: one optimizer step's metrics, an iteration's
// (its steps' and their total), and how the parts combine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/train/mismatch_metrics.h"
#include "core/train/token_losses.h"

namespace fp8rl::train {

struct StepSeconds {
  double generation = 0.0;     // as the batch reported it
  double recompute = 0.0;      // logp_old
  double train = 0.0;          // forward, backward and optimizer
  double recalibration = 0.0;  // requantization and attention scales
  double total() const { return generation + recompute + train + recalibration; }
};

// Data parallelism's collectives in a step (all 0 with one rank).
struct StepCommunication {
  int64_t bytes_reduced = 0;   // sent into gradient reductions
  int64_t bytes_gathered = 0;  // received in weight gathers
  double seconds = 0.0;        // in collectives, included in StepSeconds::train
};

// One optimizer step's metrics, or (IterationMetrics::total) a whole
// iteration's: then skipped and clipped count the steps, loss and grad_norm
// are means over the steps, loss statistics and entropy token means over the
// batch, ratio_min/max extremes, and the times sums.
struct StepMetrics {
  int64_t step = 0;         // steps taken, this one included
  int64_t skipped = 0;      // non-finite gradient: weights, optimizer state and scales untouched
  std::string skip_reason;  // of the first skipped step
  int64_t minibatches = 1;  // optimizer steps these metrics cover
  double loss = 0.0;
  double grad_norm = 0.0;  // before clipping
  int64_t clipped = 0;
  double learning_rate = 0.0;  // of the (last) step
  LossStats loss_stats;        // clip fraction, ratio, KL to the reference, importance weights
  double entropy = 0.0;        // mean over completion tokens
  bool has_mismatch = false;   // logp_gen was given; a batch's property, so only in the iteration's total
  MismatchMetrics mismatch;
  double reward_mean = 0.0;  // when rewards were given (iteration total only)
  // Mixture-of-Experts policies. routing_choices (fed token, sparse layer,
  // slot) triples were compared with the batch's recorded experts (0: none
  // given); routing_agreement is the share of the training router's choices
  // that the generator also made for that token and layer (exactly 1 when
  // both ran one recipe), whether or not the step replayed the recorded ones
  // (with replay: each router's own choice on the hidden states that the
  // replayed experts of the layers before it computed).
  int64_t routing_choices = 0;
  double routing_agreement = 0.0;
  double router_aux_loss = 0.0;  // the load-balancing loss (training_pass.h), a fed-token mean; 0 for dense policies
  int64_t sequences = 0;
  int64_t completion_tokens = 0;
  int64_t trained_tokens = 0;      // tokens through the forward and backward passes
  double tokens_per_second = 0.0;  // trained_tokens / seconds.train
  StepSeconds seconds;
  StepCommunication communication;
  double recalibration_fraction = 0.0;  // seconds.recalibration / seconds.total()
};

struct IterationMetrics {
  std::vector<StepMetrics> minibatches;  // one per optimizer step, in order
  StepMetrics total;
};

// Token-weighted merge of a micro-batch's (or a step's) loss statistics into
// a larger batch's: means weighted by tokens, extremes over both, counts summed.
void merge_loss_stats(LossStats& total, const LossStats& part);

// Tokens per second and the recalibration share, from the other fields.
void finish_timing(StepMetrics& m);

// An iteration's total from its steps' (the rules StepMetrics states); one
// step's metrics are their own total, exactly.
StepMetrics summarize_steps(const std::vector<StepMetrics>& steps);

}  // namespace fp8rl::train
