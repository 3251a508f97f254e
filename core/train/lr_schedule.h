// Learning-rate schedules for the optimizer: constant, linear warmup then
// constant, linear warmup then cosine decay to min_lr_ratio * base_lr.
//
// `step` is the 0-based index of the optimizer step about to be taken (the
// optimizer's step count before the step). With W = warmup_steps, T = total_steps:
//   warmup (step < W):      lr = base_lr * (step + 1) / W      (the first step is not wasted at lr 0;
//                                                                step W-1 reaches base_lr)
//   constant:               lr = base_lr
//   cosine (step >= W):     p  = min(1, (step - W) / (T - W)) ; p = 1 when T == W
//                           lr = base_lr * (r + (1 - r) * 0.5 * (1 + cos(pi * p)))   with r = min_lr_ratio
//   After T steps the cosine schedule stays at r * base_lr.
// Computed in double, as PyTorch computes scheduler values in Python floats.
//
// Usage:
//   LrSchedule s = lr_schedule_defaults();
//   s.kind = LrScheduleKind::warmup_cosine; s.base_lr = 1e-5; s.warmup_steps = 10; s.total_steps = 500;
//   validate_lr_schedule(s);
//   double lr = learning_rate(s, optimizer.step_count());
#pragma once

#include <cstdint>

namespace fp8rl::train {

enum class LrScheduleKind : int32_t {
  constant = 0,
  warmup_constant = 1,
  warmup_cosine = 2,
};

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::constant;
  double base_lr = 1e-6;
  int64_t warmup_steps = 0;   // warmup_constant, warmup_cosine
  int64_t total_steps = 0;    // warmup_cosine: warmup + decay steps
  double min_lr_ratio = 0.0;  // warmup_cosine: final lr / base_lr, in [0, 1]
};

LrSchedule lr_schedule_defaults();

// Throws Error(invalid_argument) when base_lr is negative or not finite,
// warmup_steps or total_steps < 0, min_lr_ratio outside [0, 1], or, for warmup_cosine,
// total_steps < 1 or warmup_steps > total_steps.
void validate_lr_schedule(const LrSchedule& schedule);

// The learning rate for 0-based step `step` (>= 0); validates the schedule.
double learning_rate(const LrSchedule& schedule, int64_t step);

}  // namespace fp8rl::train
