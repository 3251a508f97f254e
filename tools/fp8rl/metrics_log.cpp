#include "metrics_log.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "checkpoint.h"
#include "cli_error.h"
#include "json.h"

namespace fp8rl_cli {

std::string step_record_json(const StepRecord& r) {
  JsonObject o;
  o.add("phase", r.phase).add("step", static_cast<long long>(r.step)).add("loss", r.loss);
  o.add("reward_mean", r.reward_mean);
  if (r.has_val()) o.add("val_acc", r.val_acc);
  o.add("grad_norm", r.grad_norm).add("clip_fraction", r.clip_fraction).add("entropy", r.entropy);
  o.add("ratio_max", r.ratio_max).add("old_policy_kl", r.old_policy_kl);
  o.add("token_mult_prob_error", r.token_mult_prob_error).add("gen_kl_error", r.gen_kl_error);
  if (!std::isnan(r.routing_agreement)) o.add("routing_agreement", r.routing_agreement);
  if (r.router_aux_loss != 0) o.add("router_aux_loss", r.router_aux_loss);
  o.add("is_weight_mean", r.is_weight_mean).add("tokens_per_second", r.tokens_per_second);
  o.add("generation_seconds", r.generation_seconds).add("recompute_seconds", r.recompute_seconds);
  o.add("train_seconds", r.train_seconds).add("recalibration_seconds", r.recalibration_seconds);
  o.add("recalibration_fraction", r.recalibration_fraction).add("step_seconds", r.step_seconds);
  o.add("bytes_reduced", static_cast<long long>(r.bytes_reduced));
  o.add("bytes_gathered", static_cast<long long>(r.bytes_gathered));
  o.add("communication_seconds", r.communication_seconds);
  o.add_bool("skipped", r.skipped);
  return o.str();
}

namespace {

double number(const std::map<std::string, std::string>& fields, const char* name, double fallback) {
  const auto it = fields.find(name);
  if (it == fields.end() || it->second == "null") return fallback;
  return std::strtod(it->second.c_str(), nullptr);
}

}  // namespace

StepRecord step_record_from_json(const std::string& line) {
  const auto f = parse_flat_json(line);
  StepRecord r;
  r.phase = f.count("phase") ? f.at("phase") : "";
  r.step = static_cast<int64_t>(number(f, "step", 0));
  r.loss = number(f, "loss", NAN);
  r.reward_mean = number(f, "reward_mean", NAN);
  r.val_acc = number(f, "val_acc", NAN);
  r.grad_norm = number(f, "grad_norm", NAN);
  r.clip_fraction = number(f, "clip_fraction", NAN);
  r.ratio_max = number(f, "ratio_max", NAN);
  r.old_policy_kl = number(f, "old_policy_kl", NAN);
  r.entropy = number(f, "entropy", NAN);
  r.token_mult_prob_error = number(f, "token_mult_prob_error", NAN);
  r.gen_kl_error = number(f, "gen_kl_error", NAN);
  r.routing_agreement = number(f, "routing_agreement", NAN);
  r.router_aux_loss = number(f, "router_aux_loss", 0);
  r.is_weight_mean = number(f, "is_weight_mean", NAN);
  r.tokens_per_second = number(f, "tokens_per_second", NAN);
  r.generation_seconds = number(f, "generation_seconds", 0);
  r.recompute_seconds = number(f, "recompute_seconds", 0);
  r.train_seconds = number(f, "train_seconds", 0);
  r.recalibration_seconds = number(f, "recalibration_seconds", 0);
  r.recalibration_fraction = number(f, "recalibration_fraction", 0);
  r.step_seconds = number(f, "step_seconds", 0);
  r.bytes_reduced = static_cast<int64_t>(number(f, "bytes_reduced", 0));
  r.bytes_gathered = static_cast<int64_t>(number(f, "bytes_gathered", 0));
  r.communication_seconds = number(f, "communication_seconds", 0);
  r.skipped = f.count("skipped") && f.at("skipped") == "true";
  return r;
}

std::vector<StepRecord> read_metrics(const std::string& path, long long count) {
  std::vector<StepRecord> records;
  std::ifstream in(path);
  std::string line;
  while ((count < 0 || static_cast<long long>(records.size()) < count) && std::getline(in, line)) {
    if (!line.empty()) records.push_back(step_record_from_json(line));
  }
  return records;
}

// The kept lines replace the file atomically: a run killed during the
// rewrite leaves the old lines, which the next resume reads again.
void MetricsLog::open(const std::string& path, const std::vector<StepRecord>& keep) {
  std::string kept;
  for (const StepRecord& r : keep) kept += step_record_json(r) + "\n";
  write_text_file(path, kept);
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) throw LibraryError("cannot write " + path);
}

MetricsLog::~MetricsLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsLog::append(const StepRecord& record) {
  if (file_ == nullptr) return;
  std::fprintf(file_, "%s\n", step_record_json(record).c_str());
  std::fflush(file_);  // a line per step survives a crash or a Ctrl-C
}

}  // namespace fp8rl_cli
