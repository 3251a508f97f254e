#include "compare_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "checkpoint.h"
#include "cli_error.h"
#include "json_value.h"
#include "tools/plot/line_chart.h"

namespace fp8rl_cli {
namespace {

using fp8rl::tools::LineChart;
using fp8rl::tools::Series;
using fp8rl::tools::SeriesStyle;

constexpr double kLevel = 0.95;

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string number(double value) { return std::isnan(value) ? "n/a" : format("%.3f", value); }
std::string interval(const Interval& i) { return "[" + number(i.low) + ", " + number(i.high) + "]"; }

std::vector<double> field(const RunGroup& g, double Summary::*member) {
  std::vector<double> values;
  for (const Summary& s : g.seeds) values.push_back(s.*member);
  return values;
}

double final_accuracy(const Summary& s) { return s.final_val_acc; }
double best_accuracy(const Summary& s) { return s.best_val_acc; }
// What GRPO added: both ends are measured in the run's own generator, so a
// generator that evaluates worse from the same SFT weights lowers the final
// accuracy without lowering the gain.
double grpo_gain(const Summary& s) { return s.final_val_acc - s.sft_end_val_acc; }

// The baseline's and the run's values of `measure` over the seeds both ran, seed by seed.
std::pair<std::vector<double>, std::vector<double>> paired(const RunGroup& base, const RunGroup& run,
                                                           double (*measure)(const Summary&)) {
  std::map<uint64_t, double> by_seed;
  for (const Summary& s : base.seeds) by_seed[s.seed] = measure(s);
  std::pair<std::vector<double>, std::vector<double>> values;
  for (const Summary& s : run.seeds) {
    const auto it = by_seed.find(s.seed);
    if (it == by_seed.end()) continue;
    values.first.push_back(it->second);
    values.second.push_back(measure(s));
  }
  return values;
}

std::vector<double> differences(const std::pair<std::vector<double>, std::vector<double>>& values) {
  std::vector<double> d;
  for (size_t i = 0; i < values.first.size(); ++i) d.push_back(values.second[i] - values.first[i]);
  return d;
}

std::string accuracy_table(const std::vector<RunGroup>& groups, const ReportOptions& o) {
  std::ostringstream out;
  out << "| run | seeds | final val acc: median [95% CI] | mean ± std | best val acc: median [95% CI] | took off "
         "(final ≥ SFT end + "
      << number(o.takeoff_gain) << ") | first step ≥ SFT end + gain (median) | SFT-end val acc (median) |\n"
      << "|---|---|---|---|---|---|---|---|\n";
  for (const RunGroup& g : groups) {
    const std::vector<double> finals = field(g, &Summary::final_val_acc), best = field(g, &Summary::best_val_acc);
    int took = 0;
    std::vector<double> steps;
    for (const Summary& s : g.seeds) {
      took += took_off(s.sft_end_val_acc, s.final_val_acc, o.takeoff_gain) ? 1 : 0;
      const int64_t step = takeoff_step(s.val_curve, o.takeoff_gain);
      if (step >= 0) steps.push_back(static_cast<double>(step));
    }
    out << "| " << g.run << " | " << g.seeds.size() << " | " << number(median_of(finals)) << " "
        << interval(bootstrap_median_interval(finals, kLevel)) << " | " << number(mean_of(finals)) << " ± "
        << number(stddev_of(finals)) << " | " << number(median_of(best)) << " "
        << interval(bootstrap_median_interval(best, kLevel)) << " | " << took << "/" << g.seeds.size() << " | "
        << (steps.empty() ? "n/a" : format("%.0f", median_of(steps))) << " | "
        << number(median_of(field(g, &Summary::sft_end_val_acc))) << " |\n";
  }
  return out.str();
}

std::string paired_table(const std::vector<RunGroup>& groups, const RunGroup& base) {
  std::ostringstream out;
  out << "| run vs " << base.run
      << " | paired seeds | final: median difference [95% CI] | wins / losses | sign-flip p | GRPO gain (final − "
         "SFT end): median difference [95% CI] | sign-flip p | best: median difference [95% CI] | sign-flip p | "
         "seeds for 80% power (final) |\n"
      << "|---|---|---|---|---|---|---|---|---|---|\n";
  const auto cells = [](const PairedComparison& c) {
    return format("%+.3f", c.median_difference) + " " + interval(c.interval);
  };
  for (const RunGroup& g : groups) {
    if (&g == &base) continue;
    const auto finals = paired(base, g, final_accuracy), gains = paired(base, g, grpo_gain);
    const auto best = paired(base, g, best_accuracy);
    const PairedComparison final_diff = compare_paired(finals.first, finals.second, kLevel);
    const PairedComparison gain_diff = compare_paired(gains.first, gains.second, kLevel);
    const PairedComparison best_diff = compare_paired(best.first, best.second, kLevel);
    const int64_t power = seeds_for_power(differences(finals));
    out << "| " << g.run << " | " << final_diff.seeds << " | " << cells(final_diff) << " | " << final_diff.wins << " / "
        << final_diff.losses << " | " << format("%.3g", final_diff.p_value) << " | " << cells(gain_diff) << " | "
        << format("%.3g", gain_diff.p_value) << " | " << cells(best_diff) << " | " << format("%.3g", best_diff.p_value)
        << " | " << (power < 0 ? "n/a" : std::to_string(power)) << " |\n";
  }
  return out.str();
}

bool measured_routing(const std::vector<RunGroup>& groups) {
  for (const RunGroup& g : groups)
    for (const Summary& s : g.seeds)
      if (!std::isnan(s.mean_routing_agreement)) return true;
  return false;
}

std::string mismatch_table(const std::vector<RunGroup>& groups) {
  const bool routing = measured_routing(groups);
  std::ostringstream out;
  out << "| run | token_mult_prob_error (mean) | token_mult_prob_error (median step) | gen_kl_error | clip fraction | "
         "s / GRPO step | recalibration share |"
      << (routing ? " routing_agreement |" : "") << "\n|---|---|---|---|---|---|---|" << (routing ? "---|" : "")
      << "\n";
  for (const RunGroup& g : groups) {
    out << "| " << g.run << " | " << format("%.6f", mean_of(field(g, &Summary::mean_token_mult_prob_error))) << " | "
        << format("%.6f", median_of(field(g, &Summary::median_step_token_mult_prob_error))) << " | "
        << format("%.2e", mean_of(field(g, &Summary::mean_gen_kl_error))) << " | "
        << format("%.4f", mean_of(field(g, &Summary::mean_clip_fraction))) << " | "
        << format("%.3f", mean_of(field(g, &Summary::seconds_per_step))) << " | "
        << format("%.2f%%", 100 * mean_of(field(g, &Summary::recalibration_fraction))) << " |";
    if (routing) out << " " << format("%.6f", mean_of(field(g, &Summary::mean_routing_agreement))) << " |";
    out << "\n";
  }
  return out.str();
}

std::string method_note(const std::vector<RunGroup>& groups, const ReportOptions& o) {
  size_t fewest = groups.front().seeds.size();
  for (const RunGroup& g : groups) fewest = std::min(fewest, g.seeds.size());
  std::ostringstream out;
  out << "Medians over seeds with 95% percentile-bootstrap intervals (" << kBootstrapResamples
      << " resamples, fixed seed). A seed takes off when its final validation accuracy is at least "
      << number(o.takeoff_gain)
      << " above its accuracy at the end of SFT. Paired: the same seed (initial weights, prompts, sampling "
         "seeds) under both runs, differences run minus baseline, two-sided exact sign-flip test. With "
      << fewest << " paired seeds the smallest attainable p is "
      << format("%.3g", 2.0 / std::ldexp(1.0, static_cast<int>(fewest))) << "; p < 0.05 needs at least "
      << seeds_needed_for(0.05)
      << " seeds even when every seed agrees. Seconds per step are wall time on the machine that ran them; "
         "compare them only between runs made side by side on an otherwise idle machine.\n";
  return out.str();
}

// The mean over seeds of the values at each step.
Series mean_series(const std::string& label, int color, const std::map<int64_t, std::vector<double>>& by_step) {
  Series s{label, {}, {}, SeriesStyle::line, color};
  for (const auto& [step, values] : by_step) {
    s.x.push_back(static_cast<double>(step));
    s.y.push_back(mean_of(values));
  }
  return s;
}

}  // namespace

std::vector<RunGroup> group_by_run(const std::vector<Summary>& summaries) {
  std::vector<RunGroup> groups;
  for (const Summary& s : summaries) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const RunGroup& g) { return g.run == s.run; });
    if (it == groups.end()) it = groups.insert(groups.end(), RunGroup{s.run, {}});
    for (const Summary& other : it->seeds) {
      if (other.seed == s.seed)
        throw UsageError("run " + s.run + " has seed " + std::to_string(s.seed) + " twice in the summaries");
      if (other.sft_steps != s.sft_steps || other.grpo_steps != s.grpo_steps)
        throw UsageError("run " + s.run + ": seed " + std::to_string(s.seed) + " ran " + std::to_string(s.sft_steps) +
                         " SFT + " + std::to_string(s.grpo_steps) + " GRPO steps, seed " + std::to_string(other.seed) +
                         " " + std::to_string(other.sft_steps) + " + " + std::to_string(other.grpo_steps) +
                         ": not one experiment");
    }
    it->seeds.push_back(s);
  }
  return groups;
}

std::string report_markdown(const std::vector<RunGroup>& groups, const ReportOptions& o) {
  if (groups.empty()) throw UsageError("compare: no runs to report");
  const RunGroup* base = &groups.front();
  if (!o.baseline.empty()) {
    const auto it = std::find_if(groups.begin(), groups.end(), [&](const RunGroup& g) { return g.run == o.baseline; });
    if (it == groups.end()) throw UsageError("--baseline: no run named '" + o.baseline + "'");
    base = &*it;
  }
  std::string text = "Validation accuracy over seeds:\n\n" + accuracy_table(groups, o);
  if (groups.size() > 1) text += "\nPaired by seed against " + base->run + ":\n\n" + paired_table(groups, *base);
  text += "\nMismatch and cost (means over seeds):\n\n" + mismatch_table(groups);
  return text + "\n" + method_note(groups, o);
}

void write_report_charts(const std::string& folder, const std::vector<RunGroup>& groups) {
  // token_mult_prob_error is heavy-tailed (one token can make a step's mean
  // 1e8), so its means would flatten every curve: the plots show the KL per
  // interval and each run's median step.
  std::vector<LineChart> curves(2);
  curves[0] = {"validation accuracy (bold: mean over seeds)", "GRPO step", "accuracy", {}};
  curves[1] = {"gen_kl_error", "GRPO step", "mean k3 KL(gen || train)", {}};
  std::vector<LineChart> dose(2);
  dose[0] = {"final accuracy vs mismatch", "token_mult_prob_error (median step)", "final val accuracy", {}};
  dose[1] = {"final accuracy vs KL", "gen_kl_error (run mean)", "final val accuracy", {}};
  for (size_t i = 0; i < groups.size(); ++i) {
    const RunGroup& g = groups[i];
    const int color = static_cast<int>(i);
    std::map<int64_t, std::vector<double>> accuracy, kl;
    Series by_mult{g.run, {}, {}, SeriesStyle::points, color}, by_kl = by_mult;
    for (const Summary& s : g.seeds) {
      Series faint{"", {}, {}, SeriesStyle::faint, color};
      for (const auto& [step, value] : s.val_curve) {
        faint.x.push_back(static_cast<double>(step));
        faint.y.push_back(value);
        accuracy[step].push_back(value);
      }
      curves[0].series.push_back(faint);
      for (const MismatchPoint& p : s.mismatch_curve) kl[p.step].push_back(p.gen_kl_error);
      by_mult.x.push_back(s.median_step_token_mult_prob_error);
      by_mult.y.push_back(s.final_val_acc);
      by_kl.x.push_back(s.mean_gen_kl_error);
      by_kl.y.push_back(s.final_val_acc);
    }
    curves[0].series.push_back(mean_series(g.run, color, accuracy));
    curves[1].series.push_back(mean_series(g.run, color, kl));
    dose[0].series.push_back(by_mult);
    dose[1].series.push_back(by_kl);
  }
  const std::filesystem::path dir(folder);
  fp8rl::tools::write_line_charts_png((dir / "compare.png").string(), curves, 560, 420);
  fp8rl::tools::write_line_charts_png((dir / "dose.png").string(), dose, 560, 420);
}

std::vector<Summary> read_summaries(const std::vector<std::string>& paths) {
  std::vector<Summary> summaries;
  for (const std::string& path : paths) {
    const JsonValue root = read_json_file(path);
    if (root.type() != JsonValue::Type::array) throw LibraryError(path + " is not a JSON array of run summaries");
    for (size_t i = 0; i < root.items().size(); ++i)
      summaries.push_back(summary_from_json(root.items()[i], path + ", item " + std::to_string(i + 1)));
  }
  return summaries;
}

void write_summaries(const std::string& path, const std::vector<std::string>& summary_objects) {
  std::string text = "[\n";
  for (size_t i = 0; i < summary_objects.size(); ++i) {
    std::string object = summary_objects[i];
    while (!object.empty() && object.back() == '\n') object.pop_back();
    text += object + (i + 1 < summary_objects.size() ? ",\n" : "\n");
  }
  write_text_file(path, text + "]\n");
}

}  // namespace fp8rl_cli
