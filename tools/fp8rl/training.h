// The RL run behind `fp8rl train` (and `fp8rl compare`): an SFT warm-start,
// then GRPO on a task source (task_source.h: a built-in verifiable task or a
// text dataset), with periodic greedy validation,
// checkpoints, metrics.jsonl and exact resume.
#ifndef FP8RL_TOOLS_TRAINING_H
#define FP8RL_TOOLS_TRAINING_H

#include "train_config.h"

namespace fp8rl_cli {

// Runs one configuration to the end. Throws UsageError for an impossible
// configuration and LibraryError for a failed library call or file write.
// `sink` may be NULL.
RunResult run_training(const TrainConfig& config, ProgressSink* sink);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_TRAINING_H
