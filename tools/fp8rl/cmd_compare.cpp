// `fp8rl compare`: the same training run under several recipes (and
// importance-sampling modes) and seeds; writes a table of final validation
// accuracy (mean and spread over seeds), mismatch and speed, and a PNG of the
// accuracy and mismatch curves, each curve the mean over seeds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "cli_error.h"
#include "commands.h"
#include "model_setup.h"
#include "progress.h"
#include "summary.h"
#include "tools/plot/line_chart.h"
#include "training.h"

namespace fp8rl_cli {
namespace {

// One variant of the run: "recipe", "recipe:importance", either with
// ":replay" appended (routing replay, for Mixture-of-Experts policies).
struct Variant {
  std::string name, recipe, importance;
  bool replay = false;
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::vector<Variant> parse_variants(const std::string& text, const std::string& default_importance) {
  std::vector<Variant> variants;
  for (const std::string& item : split(text, ',')) {
    std::vector<std::string> parts = split(item, ':');
    const bool replay = !parts.empty() && parts.back() == "replay";
    if (replay) parts.pop_back();
    if (parts.empty() || parts.size() > 2)
      throw UsageError("--runs: '" + item + "' is not RECIPE[:IMPORTANCE][:replay]");
    const std::vector<std::string>& recipes = recipe_names();
    if (std::find(recipes.begin(), recipes.end(), parts[0]) == recipes.end())
      throw UsageError("--runs: unknown recipe '" + parts[0] + "'");
    const std::string importance = parts.size() == 2 ? parts[1] : default_importance;
    static const std::vector<std::string> modes = {"off", "plain", "truncated", "masked", "sequence-masked"};
    if (std::find(modes.begin(), modes.end(), importance) == modes.end())
      throw UsageError("--runs: unknown importance mode '" + importance + "'");
    const std::string name = parts[0] + ":" + importance + (replay ? ":replay" : "");
    variants.push_back({parts.size() == 2 ? item : name, parts[0], importance, replay});
  }
  if (variants.empty()) throw UsageError("--runs: give at least one recipe");
  return variants;
}

std::vector<uint64_t> parse_seeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  for (const std::string& item : split(text, ',')) {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0') throw UsageError("--seeds: '" + item + "' is not a number");
    seeds.push_back(value);
  }
  if (seeds.empty()) throw UsageError("--seeds: give at least one seed");
  return seeds;
}

struct VariantResult {
  Variant variant;
  std::vector<RunResult> runs;  // one per seed
};

double mean(const std::vector<double>& values) {
  double sum = 0.0;
  for (double v : values) sum += v;
  return values.empty() ? NAN : sum / static_cast<double>(values.size());
}

double median(std::vector<double> values) {
  if (values.empty()) return NAN;
  const size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
  return values[middle];
}

double stddev(const std::vector<double>& values) {
  if (values.size() < 2) return 0.0;
  const double m = mean(values);
  double sum = 0.0;
  for (double v : values) sum += (v - m) * (v - m);
  return std::sqrt(sum / static_cast<double>(values.size() - 1));
}

// A curve of the mean over seeds of the values gathered at each step.
fp8rl::tools::Series mean_by_step(const std::string& label, const std::map<int64_t, std::vector<double>>& by_step) {
  fp8rl::tools::Series series;
  series.label = label;
  for (const auto& [step, values] : by_step) {
    series.x.push_back(static_cast<double>(step));
    series.y.push_back(mean(values));
  }
  return series;
}

// A per-GRPO-step quantity of the metrics.
fp8rl::tools::Series step_curve(const VariantResult& r, double StepRecord::*field) {
  std::map<int64_t, std::vector<double>> by_step;
  for (const RunResult& run : r.runs)
    for (const StepRecord& s : run.steps)
      if (s.phase == "grpo") by_step[s.step].push_back(s.*field);
  return mean_by_step(r.variant.name, by_step);
}

// Validation accuracy; step 0 is the end of SFT.
fp8rl::tools::Series accuracy_curve(const VariantResult& r) {
  std::map<int64_t, std::vector<double>> by_step;
  for (const RunResult& run : r.runs)
    for (const auto& [step, accuracy] : run.val_curve) by_step[step].push_back(accuracy);
  return mean_by_step(r.variant.name, by_step);
}

// Mixture-of-Experts runs add a routing_agreement column (mean over seeds of
// each run's mean over GRPO steps).
bool measured_routing(const std::vector<VariantResult>& results) {
  for (const VariantResult& r : results)
    for (const RunResult& run : r.runs)
      if (!std::isnan(summarize(run).mean_routing_agreement)) return true;
  return false;
}

std::string table(const std::vector<VariantResult>& results, size_t seeds) {
  const bool routing = measured_routing(results);
  std::ostringstream out;
  out << "| run | final val acc (mean ± std over " << seeds << " seeds) | SFT-end val acc | token_mult_prob_error"
      << " (mean) | token_mult_prob_error (median step) | gen_kl_error | s/step |" << (routing ? " routing_agreement |" : "")
      << "\n|---|---|---|---|---|---|---|" << (routing ? "---|" : "") << "\n";
  char line[512];
  for (const VariantResult& r : results) {
    std::vector<double> finals, starts, mult, kl, seconds, step_mult, agreement;
    for (const RunResult& run : r.runs) {
      for (const StepRecord& step : run.steps)
        if (step.phase == "grpo") step_mult.push_back(step.token_mult_prob_error);
      const Summary s = summarize(run);
      finals.push_back(s.final_val_acc);
      starts.push_back(s.sft_end_val_acc);
      mult.push_back(s.mean_token_mult_prob_error);
      kl.push_back(s.mean_gen_kl_error);
      seconds.push_back(s.seconds_per_step);
      agreement.push_back(s.mean_routing_agreement);
    }
    std::snprintf(line, sizeof line, "| %s | %.3f ± %.3f | %.3f | %.6f | %.6f | %.2e | %.2f |",
                  r.variant.name.c_str(), mean(finals), stddev(finals), mean(starts), mean(mult), median(step_mult),
                  mean(kl), mean(seconds));
    out << line;
    if (routing) {
      std::snprintf(line, sizeof line, " %.6f |", mean(agreement));
      out << line;
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace

void declare_compare(ArgParser& p) {
  declare_train(p);
  p.option("runs", "bf16,fp8,fp8-kv,fp8-gen:truncated,fp8-gen:off",
           "comma-separated RECIPE[:IMPORTANCE][:replay] (importance defaults to --importance; replay: MoE routing "
           "replay)");
  p.option("seeds", "0,1,2", "comma-separated seeds");
}

int run_compare(const ArgParser& p) {
  const TrainConfig base = train_config_from(p);
  if (base.out_dir.empty()) throw UsageError("compare needs --out DIR");
  if (base.resume) throw UsageError("compare does not take --resume");
  const std::vector<Variant> variants = parse_variants(p.text("runs"), base.importance);
  const std::vector<uint64_t> seeds = parse_seeds(p.text("seeds"));
  std::filesystem::create_directories(base.out_dir);
  std::vector<VariantResult> results;
  for (const Variant& variant : variants) {
    VariantResult result{variant, {}};
    for (uint64_t seed : seeds) {
      TrainConfig config = base;
      config.recipe = variant.recipe;
      config.importance = variant.importance;
      config.routing_replay = variant.replay || base.routing_replay;
      config.seed = seed;
      std::string folder = variant.name;
      std::replace(folder.begin(), folder.end(), ':', '-');
      config.out_dir = (std::filesystem::path(base.out_dir) / (folder + "-seed" + std::to_string(seed))).string();
      std::fprintf(stderr, "fp8rl compare: %s, seed %llu\n", variant.name.c_str(),
                   static_cast<unsigned long long>(seed));
      ProgressBar progress(stderr, p.is_set("quiet"));
      result.runs.push_back(run_training(config, &progress));
    }
    results.push_back(std::move(result));
  }

  const std::string markdown = table(results, seeds.size());
  write_text_file((std::filesystem::path(base.out_dir) / "compare.md").string(), markdown);
  std::vector<fp8rl::tools::LineChart> charts(3);
  charts[0] = {"validation accuracy (mean over seeds)", "GRPO step", "accuracy", {}};
  charts[1] = {"token_mult_prob_error", "GRPO step", "mean exp|logp_old - logp_gen|", {}};
  charts[2] = {"gen_kl_error", "GRPO step", "mean k3 KL(gen || train)", {}};
  for (const VariantResult& r : results) {
    charts[0].series.push_back(accuracy_curve(r));
    charts[1].series.push_back(step_curve(r, &StepRecord::token_mult_prob_error));
    charts[2].series.push_back(step_curve(r, &StepRecord::gen_kl_error));
  }
  const std::string png = (std::filesystem::path(base.out_dir) / "compare.png").string();
  fp8rl::tools::write_line_charts_png(png, charts, 560, 420);
  std::fputs(markdown.c_str(), stdout);
  std::printf("\nwrote %s/compare.md and %s\n", base.out_dir.c_str(), png.c_str());
  return 0;
}

}  // namespace fp8rl_cli
