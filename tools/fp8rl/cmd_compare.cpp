// `fp8rl compare`: the same training run under several run specs (recipe,
// importance sampling, stale scales, routing replay) and seeds, or a report
// rebuilt from the summaries.json an earlier comparison wrote (--from). It
// prints and writes the statistics over seeds (compare.md) and plots
// (compare.png, dose.png). Finished runs whose configuration is unchanged are
// reused, so an interrupted comparison continues where it stopped and a
// comparison can grow by more seeds or runs.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint.h"
#include "cli_error.h"
#include "commands.h"
#include "compare_report.h"
#include "compare_spec.h"
#include "json_value.h"
#include "progress.h"
#include "summary.h"
#include "training.h"
#include "world.h"

namespace fp8rl_cli {
namespace {

namespace fs = std::filesystem;

// One training run of the comparison and where it keeps its files.
struct Job {
  TrainConfig config;
  std::string key;      // what makes a finished run reusable: every flag that shapes its result
  std::string summary;  // summary_json, once done or reused
  Summary result;       // what `summary` says
};

// The options that do not change a run's result (thread counts do not: every
// reduction runs in a fixed order) or that the job sets itself.
const std::set<std::string>& options_outside_key() {
  static const std::set<std::string> names = {
      "runs",     "seeds",      "out",    "threads", "quiet",      "jobs",         "from",           "takeoff-gain",
      "baseline", "save-every", "resume", "recipe",  "importance", "stale-scales", "routing-replay", "seed"};
  return names;
}

std::string run_key(const ArgParser& p, const TrainConfig& c) {
  std::string key = std::string("fp8rl ") + fp8rl_version_string() + "\nrun " + c.run_label() + "\nseed " +
                    std::to_string(c.seed) + "\n";
  for (const auto& [name, value] : p.effective_values())
    if (!options_outside_key().count(name)) key += "--" + name + " " + value + "\n";
  return key;
}

std::string key_path(const TrainConfig& c) { return (fs::path(c.out_dir) / "compare_key.txt").string(); }

// Takes the summary of a finished run with the same key; false when there is
// none. A damaged summary file throws rather than being trained over.
bool reuse_summary(Job& job) {
  if (read_text_file(key_path(job.config)) != job.key) return false;
  const std::string path = RunPaths(job.config.out_dir).summary;
  std::string text = read_text_file(path);
  if (text.empty()) return false;
  job.result = summary_from_json(parse_json(text), path);
  job.summary = std::move(text);
  return true;
}

void train_job(Job& job, bool quiet) {
  ProgressBar progress(stderr, quiet);
  const RunResult result = run_training(job.config, world().leader() ? &progress : nullptr);
  job.summary = summary_json(job.config, summarize(job.config, result));
  // Read back, so that the report of fresh runs is the report `--from` rebuilds from the file.
  job.result = summary_from_json(parse_json(job.summary), RunPaths(job.config.out_dir).summary);
  if (!world().leader()) return;  // under MPI, rank 0 alone writes
  write_text_file(RunPaths(job.config.out_dir).summary, job.summary);
  write_text_file(key_path(job.config), job.key);  // last: a run cut short is never reused
}

// Runs the jobs, `parallel` at a time; the first failure stops new ones and is rethrown.
void train_jobs(std::vector<Job*>& jobs, int parallel, bool quiet) {
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::exception_ptr failure;
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure) return;
        std::fprintf(stderr, "fp8rl compare: %s (%zu of %zu to train)\n",
                     fs::path(jobs[i]->config.out_dir).filename().c_str(), i + 1, jobs.size());
      }
      try {
        train_job(*jobs[i], quiet || parallel > 1);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        return;
      }
    }
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < std::min<int>(parallel, static_cast<int>(jobs.size())); ++w) workers.emplace_back(worker);
  for (std::thread& t : workers) t.join();
  if (failure) std::rethrow_exception(failure);
}

// Trains (or reuses) every run and writes OUT/summaries.json; returns the summaries.
Job make_job(const ArgParser& p, const TrainConfig& config, const std::string& folder_name, const std::string& out) {
  Job job{config, "", "", {}};
  std::string folder = folder_name;
  std::replace(folder.begin(), folder.end(), ':', '-');
  job.config.out_dir = (fs::path(out) / folder).string();
  job.key = run_key(p, job.config);
  return job;
}

// With --sft-recipe every run of a seed starts GRPO from the same SFT, so it
// is trained once per seed, as a run of no GRPO steps, and replayed by the
// runs (TrainConfig::sft_from): the same bits for a fraction of the time.
Job shared_sft_job(const ArgParser& p, const TrainConfig& base, uint64_t seed, const std::string& out) {
  TrainConfig config = configure_run(base, RunSpec{base.sft_recipe, base.importance}, seed);
  config.sft_recipe.clear();
  config.steps = 0;
  return make_job(p, config, "sft-" + base.sft_recipe + "-seed" + std::to_string(seed), out);
}

// Trains (or reuses) every run and writes OUT/summaries.json; returns the summaries.
std::vector<Summary> train_all(const ArgParser& p, const std::string& out) {
  TrainConfig base = train_config_from(p);
  if (base.resume) throw UsageError("compare does not take --resume (finished runs are reused by themselves)");
  const int parallel = static_cast<int>(p.integer("jobs", 1, 256));
  if (parallel > 1 && world().size() > 1)
    throw UsageError("--jobs trains runs side by side in one process; under MPI every rank trains each run together");
  if (parallel > 1 && base.threads == 0)
    base.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / parallel);
  const std::vector<uint64_t> seeds = parse_seeds(p.text("seeds"));
  const bool share_sft = !base.sft_recipe.empty() && base.sft_steps > 0;
  std::vector<Job> sft_jobs, jobs;
  for (uint64_t seed : seeds)
    if (share_sft) sft_jobs.push_back(shared_sft_job(p, base, seed, out));
  for (const RunSpec& spec : parse_run_specs(p.text("runs"), base.importance)) {
    for (size_t s = 0; s < seeds.size(); ++s) {
      const TrainConfig config = configure_run(base, spec, seeds[s]);
      jobs.push_back(make_job(p, config, config.run_label() + "-seed" + std::to_string(seeds[s]), out));
      if (share_sft) jobs.back().config.sft_from = sft_jobs[s].config.out_dir;
    }
  }
  fs::create_directories(out);
  std::vector<Job*> to_train, sft_to_train;
  for (Job& job : jobs)
    if (!reuse_summary(job)) to_train.push_back(&job);
  for (Job& sft : sft_jobs) {
    const bool needed = std::any_of(to_train.begin(), to_train.end(),
                                    [&](const Job* job) { return job->config.sft_from == sft.config.out_dir; });
    if (needed && !reuse_summary(sft)) sft_to_train.push_back(&sft);
  }
  if (to_train.size() < jobs.size())
    std::fprintf(stderr, "fp8rl compare: reusing %zu finished runs of %zu\n", jobs.size() - to_train.size(),
                 jobs.size());
  train_jobs(sft_to_train, parallel, p.is_set("quiet"));
  train_jobs(to_train, parallel, p.is_set("quiet"));

  std::vector<std::string> objects;
  std::vector<Summary> summaries;
  for (const Job& job : jobs) {
    objects.push_back(job.summary);
    summaries.push_back(job.result);
  }
  if (world().leader()) write_summaries((fs::path(out) / "summaries.json").string(), objects);
  return summaries;
}

// --from: only --out, --runs and the report's own options go with it.
void check_report_only(const ArgParser& p) {
  static const std::set<std::string> allowed = {"from", "out", "runs", "takeoff-gain", "baseline", "quiet"};
  for (const auto& [name, value] : p.effective_values())
    if (p.given(name) && !allowed.count(name))
      throw UsageError("--from reports finished runs; --" + name + " applies only to training them");
}

// --from with --runs: those runs' summaries, in the order --runs names them.
std::vector<Summary> select_runs(const std::vector<Summary>& all, const std::string& runs) {
  std::vector<Summary> selected;
  for (const RunSpec& spec : parse_run_specs(runs, TrainConfig{}.importance)) {
    const std::string label = configure_run(TrainConfig{}, spec, 0).run_label();
    const size_t before = selected.size();
    for (const Summary& s : all)
      if (s.run == label) selected.push_back(s);
    if (selected.size() == before) throw UsageError("--runs: the summaries hold no run " + label);
  }
  return selected;
}

}  // namespace

void declare_compare(ArgParser& p) {
  declare_train(p);
  p.option(
      "runs", "bf16,fp8,fp8-kv,fp8-gen:truncated,fp8-gen:off",
      "comma-separated RECIPE[:IMPORTANCE][:stale][:replay] (importance defaults to --importance; stale: the "
      "FP8 KV cache keeps the attention scales GRPO began with, the learner's too under fp8-kv; replay: MoE routing "
      "replay)");
  p.option("seeds", "0-7", "comma-separated seeds or ranges A-B");
  p.option("jobs", "1", "runs trained at once (--threads 0 then shares the cores among them)");
  p.option("from", "",
           "report, without training, from the summaries.json an earlier compare wrote, or several (comma-separated: "
           "parts of one experiment) merged (--runs: a subset)");
  p.option("takeoff-gain", "0.15", "a seed takes off when its final val accuracy is this far above the SFT end");
  p.option("baseline", "", "the run that paired comparisons are against (default: the first)");
}

int run_compare(const ArgParser& p) {
  ReportOptions options;
  options.takeoff_gain = p.real("takeoff-gain", 0, 1);
  options.baseline = p.text("baseline");
  const std::vector<std::string> from = split_list(p.text("from"));
  std::string out = p.text("out");
  std::vector<Summary> summaries;
  if (p.given("from") && from.empty()) throw UsageError("--from: give one or more summaries.json files");
  if (!from.empty()) {
    check_report_only(p);
    if (out.empty()) out = fs::path(from.front()).parent_path().string();
    if (out.empty()) out = ".";
    summaries = read_summaries(from);
    if (p.given("runs")) summaries = select_runs(summaries, p.text("runs"));
    fs::create_directories(out);
  } else {
    if (out.empty()) throw UsageError("compare needs --out DIR (or --from FILE to report earlier runs)");
    summaries = train_all(p, out);
  }
  if (!world().leader()) return 0;
  const std::vector<RunGroup> groups = group_by_run(summaries);
  const std::string markdown = report_markdown(groups, options);
  write_text_file((fs::path(out) / "compare.md").string(), markdown);
  write_report_charts(out, groups);
  std::fputs(markdown.c_str(), stdout);
  std::printf("\nwrote %s/compare.md, compare.png and dose.png\n", out.c_str());
  return 0;
}

}  // namespace fp8rl_cli
