#include "summary.h"

#include <cmath>
#include <cstdio>

#include "json.h"

namespace fp8rl_cli {

Summary summarize(const RunResult& result) {
  Summary s;
  double mult = 0, kl = 0, seconds = 0, recal = 0, agreement = 0;
  int64_t routed_steps = 0;
  for (const StepRecord& r : result.steps) {
    if (r.phase == "sft") {
      ++s.sft_steps;
      continue;
    }
    ++s.grpo_steps;
    mult += r.token_mult_prob_error;
    kl += r.gen_kl_error;
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
    s.mean_gen_kl_error = kl / n;
    s.seconds_per_step = seconds / n;
    s.recalibration_fraction = recal / n;
  }
  s.sft_end_val_acc = result.sft_end_val_acc;
  s.final_val_acc = result.final_val_acc;
  s.best_val_acc = result.best_val_acc;
  s.wall_seconds = result.wall_seconds;
  return s;
}

std::string summary_text(const TrainConfig& c, const Summary& s) {
  char text[1024];
  std::snprintf(text, sizeof text,
                "summary\n"
                "  task                     %s\n"
                "  recipe                   %s (importance %s)\n"
                "  steps                    %lld SFT + %lld GRPO\n"
                "  val accuracy after SFT   %.1f%%\n"
                "  val accuracy final       %.1f%%\n"
                "  val accuracy best        %.1f%%\n"
                "  mean token_mult_prob_err %.6f\n"
                "  mean gen_kl_error        %.3e\n"
                "  seconds per GRPO step    %.3f\n"
                "  recalibration fraction   %.4f\n"
                "  wall time                %.1f s\n",
                c.task_label().c_str(), c.recipe.c_str(), c.importance.c_str(), static_cast<long long>(s.sft_steps),
                static_cast<long long>(s.grpo_steps), 100 * s.sft_end_val_acc, 100 * s.final_val_acc,
                100 * s.best_val_acc, s.mean_token_mult_prob_error, s.mean_gen_kl_error, s.seconds_per_step,
                s.recalibration_fraction, s.wall_seconds);
  std::string result = text;
  if (!std::isnan(s.mean_routing_agreement)) {
    std::snprintf(text, sizeof text, "  mean routing_agreement   %.6f%s\n", s.mean_routing_agreement,
                  c.routing_replay ? " (routing replay)" : "");
    result += text;
  }
  return result;
}

std::string summary_json(const TrainConfig& c, const RunResult& result, const Summary& s) {
  std::string curve = "[";
  for (const auto& point : result.val_curve) {
    if (curve.size() > 1) curve += ", ";
    curve += "[" + std::to_string(point.first) + ", " + json_number(point.second) + "]";
  }
  curve += "]";
  JsonObject o;
  o.add("task", c.task_label()).add("recipe", c.recipe).add("importance", c.importance);
  o.add("seed", static_cast<long long>(c.seed));
  o.add("sft_steps", static_cast<long long>(s.sft_steps)).add("grpo_steps", static_cast<long long>(s.grpo_steps));
  o.add("sft_end_val_acc", s.sft_end_val_acc).add("final_val_acc", s.final_val_acc);
  o.add("best_val_acc", s.best_val_acc).add("mean_token_mult_prob_error", s.mean_token_mult_prob_error);
  o.add("mean_gen_kl_error", s.mean_gen_kl_error).add("seconds_per_step", s.seconds_per_step);
  o.add("recalibration_fraction", s.recalibration_fraction).add("wall_seconds", s.wall_seconds);
  if (!std::isnan(s.mean_routing_agreement)) o.add("mean_routing_agreement", s.mean_routing_agreement);
  o.add_bool("routing_replay", c.routing_replay).add("router_aux_coef", c.router_aux_coef);
  if (!c.text.train.empty())
    o.add("data", c.text.train).add("val", c.text.val).add("reward", c.text.reward).add("init_from", c.init_from);
  o.add_raw("val_curve", curve);
  return o.str() + "\n";
}

}  // namespace fp8rl_cli
