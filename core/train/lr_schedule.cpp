#include "core/train/lr_schedule.h"

#include <cmath>
#include <string>

#include "kernels/error.h"

namespace fp8rl::train {

LrSchedule lr_schedule_defaults() { return LrSchedule{}; }

void validate_lr_schedule(const LrSchedule& s) {
  require(s.kind == LrScheduleKind::constant || s.kind == LrScheduleKind::warmup_constant ||
              s.kind == LrScheduleKind::warmup_cosine,
          "lr schedule: unknown kind " + std::to_string(static_cast<int>(s.kind)));
  require(std::isfinite(s.base_lr) && s.base_lr >= 0.0,
          "lr schedule: learning_rate (base_lr) must be finite and >= 0, got " + std::to_string(s.base_lr));
  require(s.warmup_steps >= 0, "lr schedule: warmup_steps must be >= 0, got " + std::to_string(s.warmup_steps));
  require(s.total_steps >= 0, "lr schedule: total_steps must be >= 0, got " + std::to_string(s.total_steps));
  require(std::isfinite(s.min_lr_ratio) && s.min_lr_ratio >= 0.0 && s.min_lr_ratio <= 1.0,
          "lr schedule: min_lr_ratio must be in [0, 1], got " + std::to_string(s.min_lr_ratio));
  if (s.kind == LrScheduleKind::warmup_cosine) {
    require(s.total_steps >= 1, "lr schedule: total_steps must be >= 1, got " + std::to_string(s.total_steps));
    require(s.warmup_steps <= s.total_steps, "lr schedule: warmup_steps (" + std::to_string(s.warmup_steps) +
                                                 ") exceeds total_steps (" + std::to_string(s.total_steps) + ")");
  }
}

double learning_rate(const LrSchedule& s, int64_t step) {
  validate_lr_schedule(s);
  require(step >= 0, "lr schedule: step must be >= 0, got " + std::to_string(step));
  if (s.kind == LrScheduleKind::constant) return s.base_lr;
  if (step < s.warmup_steps) {
    return s.base_lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  }
  if (s.kind == LrScheduleKind::warmup_constant) return s.base_lr;
  const int64_t decay_steps = s.total_steps - s.warmup_steps;
  double progress = 1.0;
  if (decay_steps > 0 && step - s.warmup_steps < decay_steps) {
    progress = static_cast<double>(step - s.warmup_steps) / static_cast<double>(decay_steps);
  }
  const double pi = 3.14159265358979323846;
  const double cosine = 0.5 * (1.0 + std::cos(pi * progress));
  return s.base_lr * (s.min_lr_ratio + (1.0 - s.min_lr_ratio) * cosine);
}

}  // namespace fp8rl::train
