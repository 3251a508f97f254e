// The report of `fp8rl compare`, computed from per-seed run summaries alone
// (fresh runs, or committed summaries.json files): markdown tables of the
// statistics over seeds (seed_statistics.h) and PNG plots.
#ifndef FP8RL_TOOLS_COMPARE_REPORT_H
#define FP8RL_TOOLS_COMPARE_REPORT_H

#include <string>
#include <vector>

#include "seed_statistics.h"
#include "summary.h"

namespace fp8rl_cli {

struct ReportOptions {
  double takeoff_gain = kDefaultTakeoffGain;
  std::string baseline;  // the run the paired comparisons are against; "" = the first
};

// One run spec's summaries, one per seed, in seed order.
struct RunGroup {
  std::string run;
  std::vector<Summary> seeds;
};

// Groups by Summary::run, in order of first appearance; throws UsageError
// for a seed that appears twice in one run, or seeds of one run with
// different SFT or GRPO step counts (parts of different experiments).
std::vector<RunGroup> group_by_run(const std::vector<Summary>& summaries);

// Three tables: accuracy over seeds (median, bootstrap interval, take-off),
// paired comparisons against the baseline, and mismatch and cost.
std::string report_markdown(const std::vector<RunGroup>& groups, const ReportOptions& options);

// compare.png: validation accuracy (each seed faint, the mean over seeds
// bold) and gen_kl_error per validation interval. dose.png: each seed's
// final accuracy against its median-step token_mult_prob_error and its mean
// gen_kl_error, one color per run.
void write_report_charts(const std::string& folder, const std::vector<RunGroup>& groups);

// One or more summaries.json files (JSON arrays of summary objects), in
// order: the parts of one experiment, trained at different times or on
// different machines (the bits do not depend on the machine).
std::vector<Summary> read_summaries(const std::vector<std::string>& paths);
void write_summaries(const std::string& path, const std::vector<std::string>& summary_objects);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_COMPARE_REPORT_H
