// The end-of-run summary: printed for people and written as summary.json.
#ifndef FP8RL_TOOLS_SUMMARY_H
#define FP8RL_TOOLS_SUMMARY_H

#include <string>

#include "train_config.h"

namespace fp8rl_cli {

struct Summary {
  int64_t sft_steps = 0, grpo_steps = 0;
  double sft_end_val_acc = 0, final_val_acc = 0, best_val_acc = 0;
  double mean_token_mult_prob_error = 1, mean_gen_kl_error = 0;
  double mean_routing_agreement = NAN;  // over the GRPO steps that measured it
  double seconds_per_step = 0;  // GRPO steps
  double recalibration_fraction = 0;
  double wall_seconds = 0;
};

Summary summarize(const RunResult& result);
std::string summary_text(const TrainConfig& config, const Summary& summary);
std::string summary_json(const TrainConfig& config, const RunResult& result, const Summary& summary);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_SUMMARY_H
