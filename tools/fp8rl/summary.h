// The end-of-run summary: printed for people and written as summary.json,
// from which `fp8rl compare` rebuilds its tables and plots (so a comparison
// can be committed as small summaries rather than every step of every run).
#ifndef FP8RL_TOOLS_SUMMARY_H
#define FP8RL_TOOLS_SUMMARY_H

#include <string>
#include <utility>
#include <vector>

#include "json_value.h"
#include "train_config.h"

namespace fp8rl_cli {

// The mean mismatch over the GRPO steps since the previous validation (the
// report plots the KL; summaries.json keeps both for other readers).
struct MismatchPoint {
  int64_t step = 0;  // the validation step that ends the interval
  double token_mult_prob_error = 1, gen_kl_error = 0;
};

struct Summary {
  std::string run;  // TrainConfig::run_label()
  uint64_t seed = 0;
  int64_t sft_steps = 0, grpo_steps = 0;
  double sft_end_val_acc = 0, final_val_acc = 0, best_val_acc = 0;
  double mean_token_mult_prob_error = 1, median_step_token_mult_prob_error = 1, mean_gen_kl_error = 0;
  double mean_routing_agreement = NAN;  // over the GRPO steps that measured it
  double mean_clip_fraction = 0;        // PPO clipping acts only with several mini-batches per GRPO step
  double seconds_per_step = 0;          // GRPO steps
  double recalibration_fraction = 0;
  double wall_seconds = 0;
  std::vector<std::pair<int64_t, double>> val_curve;  // (GRPO step, accuracy); step 0 = SFT end
  std::vector<MismatchPoint> mismatch_curve;          // one point per validation after step 0
};

Summary summarize(const TrainConfig& config, const RunResult& result);
std::string summary_text(const TrainConfig& config, const Summary& summary);
std::string summary_json(const TrainConfig& config, const Summary& summary);
// Reads what summary_json wrote; throws LibraryError naming `source` and the field.
Summary summary_from_json(const JsonValue& json, const std::string& source);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_SUMMARY_H
