#include "summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli_error.h"
#include "json.h"
#include "seed_statistics.h"

namespace fp8rl_cli {
namespace {

// The validation interval a GRPO step belongs to: the first validation at or after it.
std::vector<MismatchPoint> mismatch_curve(const RunResult& result) {
  std::vector<MismatchPoint> curve;
  size_t index = 0;  // SFT records come first and share step numbers with GRPO ones
  while (index < result.steps.size() && result.steps[index].phase == "sft") ++index;
  for (const auto& [val_step, accuracy] : result.val_curve) {
    if (val_step == 0) continue;
    double mult = 0, kl = 0;
    int64_t steps = 0;
    for (; index < result.steps.size() && result.steps[index].step <= val_step; ++index, ++steps) {
      mult += result.steps[index].token_mult_prob_error;
      kl += result.steps[index].gen_kl_error;
    }
    if (steps > 0) curve.push_back({val_step, mult / static_cast<double>(steps), kl / static_cast<double>(steps)});
  }
  return curve;
}

}  // namespace

Summary summarize(const TrainConfig& config, const RunResult& result) {
  Summary s;
  s.run = config.run_label();
  s.seed = config.seed;
  double mult = 0, kl = 0, seconds = 0, recal = 0, agreement = 0, clip = 0;
  std::vector<double> step_mult;
  int64_t routed_steps = 0;
  for (const StepRecord& r : result.steps) {
    if (r.phase == "sft") {
      ++s.sft_steps;
      continue;
    }
    ++s.grpo_steps;
    mult += r.token_mult_prob_error;
    step_mult.push_back(r.token_mult_prob_error);
    kl += r.gen_kl_error;
    clip += r.clip_fraction;
    seconds += r.step_seconds;
    recal += r.recalibration_fraction;
    if (!std::isnan(r.routing_agreement)) {
      agreement += r.routing_agreement;
      ++routed_steps;
    }
  }
  if (routed_steps > 0) s.mean_routing_agreement = agreement / static_cast<double>(routed_steps);
  if (s.grpo_steps > 0) {
    const double n = static_cast<double>(s.grpo_steps);
    s.mean_token_mult_prob_error = mult / n;
    s.median_step_token_mult_prob_error = median_of(step_mult);
    s.mean_gen_kl_error = kl / n;
    s.mean_clip_fraction = clip / n;
    s.seconds_per_step = seconds / n;
    s.recalibration_fraction = recal / n;
  }
  s.sft_end_val_acc = result.sft_end_val_acc;
  s.final_val_acc = result.final_val_acc;
  s.best_val_acc = result.best_val_acc;
  s.wall_seconds = result.wall_seconds;
  s.val_curve = result.val_curve;
  s.mismatch_curve = mismatch_curve(result);
  return s;
}

std::string summary_text(const TrainConfig& c, const Summary& s) {
  char text[1024];
  std::snprintf(text, sizeof text,
                "summary\n"
                "  task                     %s\n"
                "  recipe                   %s (importance %s%s)\n"
                "  steps                    %lld SFT + %lld GRPO\n"
                "  val accuracy after SFT   %.1f%%\n"
                "  val accuracy final       %.1f%%\n"
                "  val accuracy best        %.1f%%\n"
                "  mean token_mult_prob_err %.6f\n"
                "  mean gen_kl_error        %.3e\n"
                "  mean clip fraction       %.4f\n"
                "  seconds per GRPO step    %.3f\n"
                "  recalibration fraction   %.4f\n"
                "  wall time                %.1f s\n",
                c.task_label().c_str(), c.recipe.c_str(), c.importance.c_str(),
                c.stale_scales ? ", stale attention scales" : "", static_cast<long long>(s.sft_steps),
                static_cast<long long>(s.grpo_steps), 100 * s.sft_end_val_acc, 100 * s.final_val_acc,
                100 * s.best_val_acc, s.mean_token_mult_prob_error, s.mean_gen_kl_error, s.mean_clip_fraction,
                s.seconds_per_step, s.recalibration_fraction, s.wall_seconds);
  std::string result = text;
  if (!std::isnan(s.mean_routing_agreement)) {
    std::snprintf(text, sizeof text, "  mean routing_agreement   %.6f%s\n", s.mean_routing_agreement,
                  c.routing_replay ? " (routing replay)" : "");
    result += text;
  }
  return result;
}

std::string summary_json(const TrainConfig& c, const Summary& s) {
  std::string curve = "[", mismatch = "[";
  for (const auto& [step, accuracy] : s.val_curve)
    curve +=
        std::string(curve.size() > 1 ? ", " : "") + "[" + std::to_string(step) + ", " + json_number(accuracy) + "]";
  for (const MismatchPoint& p : s.mismatch_curve)
    mismatch += std::string(mismatch.size() > 1 ? ", " : "") + "[" + std::to_string(p.step) + ", " +
                json_number(p.token_mult_prob_error) + ", " + json_number(p.gen_kl_error) + "]";
  JsonObject o;
  o.add("run", s.run).add("task", c.task_label()).add("recipe", c.recipe).add("importance", c.importance);
  o.add("seed", static_cast<long long>(s.seed)).add_bool("stale_scales", c.stale_scales);
  o.add("minibatches", static_cast<long long>(c.minibatches))
      .add("sft_recipe", c.sft_recipe.empty() ? c.recipe : c.sft_recipe);
  o.add("sft_steps", static_cast<long long>(s.sft_steps)).add("grpo_steps", static_cast<long long>(s.grpo_steps));
  o.add("sft_end_val_acc", s.sft_end_val_acc).add("final_val_acc", s.final_val_acc);
  o.add("best_val_acc", s.best_val_acc).add("mean_token_mult_prob_error", s.mean_token_mult_prob_error);
  o.add("median_step_token_mult_prob_error", s.median_step_token_mult_prob_error);
  o.add("mean_gen_kl_error", s.mean_gen_kl_error).add("mean_clip_fraction", s.mean_clip_fraction);
  o.add("seconds_per_step", s.seconds_per_step).add("recalibration_fraction", s.recalibration_fraction);
  o.add("wall_seconds", s.wall_seconds);
  if (!std::isnan(s.mean_routing_agreement)) o.add("mean_routing_agreement", s.mean_routing_agreement);
  o.add_bool("routing_replay", c.routing_replay).add("router_aux_coef", c.router_aux_coef);
  if (!c.text.train.empty())
    o.add("data", c.text.train).add("val", c.text.val).add("reward", c.text.reward).add("init_from", c.init_from);
  o.add_raw("val_curve", curve + "]").add_raw("mismatch_curve", mismatch + "]");
  return o.str() + "\n";
}

namespace {

class SummaryReader {
 public:
  SummaryReader(const JsonValue& json, const std::string& source) : json_(json), source_(source) {
    if (!json.is_object()) fail("is " + std::string(json_type_name(json.type())) + ", not an object");
  }
  const JsonValue& member(const std::string& key) const {
    const JsonValue* value = json_.find(key);
    if (value == nullptr) fail("has no \"" + key + "\"");
    return *value;
  }
  // Absent members keep the default; null (a non-finite number) reads as NaN.
  double number(const std::string& key, double fallback) const {
    const JsonValue* value = json_.find(key);
    if (value == nullptr) return fallback;
    if (value->type() == JsonValue::Type::null) return NAN;
    if (!value->is_number()) fail("\"" + key + "\" is " + json_type_name(value->type()) + ", not a number");
    return value->number();
  }
  // An array of arrays of `width` numbers.
  std::vector<std::vector<double>> rows(const std::string& key, size_t width) const {
    std::vector<std::vector<double>> result;
    const JsonValue* value = json_.find(key);
    if (value == nullptr) return result;
    for (const JsonValue& row : value->items()) {
      if (row.items().size() != width)
        fail("\"" + key + "\" has a row of " + std::to_string(row.items().size()) + " values, not " +
             std::to_string(width));
      std::vector<double> numbers;
      for (const JsonValue& x : row.items()) numbers.push_back(x.is_number() ? x.number() : NAN);
      result.push_back(numbers);
    }
    return result;
  }
  [[noreturn]] void fail(const std::string& why) const { throw LibraryError(source_ + ": the summary " + why); }

 private:
  const JsonValue& json_;
  std::string source_;
};

}  // namespace

Summary summary_from_json(const JsonValue& json, const std::string& source) {
  const SummaryReader r(json, source);
  Summary s;
  if (!r.member("run").is_string()) r.fail("\"run\" is not a string");
  s.run = r.member("run").string();
  s.seed = static_cast<uint64_t>(r.number("seed", 0));
  s.sft_steps = static_cast<int64_t>(r.number("sft_steps", 0));
  s.grpo_steps = static_cast<int64_t>(r.number("grpo_steps", 0));
  s.sft_end_val_acc = r.number("sft_end_val_acc", NAN);
  s.final_val_acc = r.number("final_val_acc", NAN);
  s.best_val_acc = r.number("best_val_acc", NAN);
  s.mean_token_mult_prob_error = r.number("mean_token_mult_prob_error", 1);
  s.median_step_token_mult_prob_error = r.number("median_step_token_mult_prob_error", NAN);
  s.mean_gen_kl_error = r.number("mean_gen_kl_error", 0);
  s.mean_routing_agreement = r.number("mean_routing_agreement", NAN);
  s.mean_clip_fraction = r.number("mean_clip_fraction", NAN);
  s.seconds_per_step = r.number("seconds_per_step", NAN);
  s.recalibration_fraction = r.number("recalibration_fraction", NAN);
  s.wall_seconds = r.number("wall_seconds", NAN);
  for (const std::vector<double>& row : r.rows("val_curve", 2))
    s.val_curve.emplace_back(static_cast<int64_t>(row[0]), row[1]);
  for (const std::vector<double>& row : r.rows("mismatch_curve", 3))
    s.mismatch_curve.push_back({static_cast<int64_t>(row[0]), row[1], row[2]});
  return s;
}

}  // namespace fp8rl_cli
