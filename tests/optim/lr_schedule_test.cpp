// core/train lr schedules at specific steps against their closed forms.
#include "core/train/lr_schedule.h"

#include <doctest/doctest.h>

#include <cmath>

#include "kernels/error.h"

namespace {

using namespace fp8rl::train;

TEST_CASE("lr schedule: constant") {
  LrSchedule s;
  s.base_lr = 3e-4;
  for (int64_t step : {0, 1, 100, 1000000}) CHECK(learning_rate(s, step) == 3e-4);
}

TEST_CASE("lr schedule: linear warmup then constant") {
  LrSchedule s;
  s.kind = LrScheduleKind::warmup_constant;
  s.base_lr = 1e-3;
  s.warmup_steps = 4;
  CHECK(learning_rate(s, 0) == doctest::Approx(0.25e-3).epsilon(1e-15));
  CHECK(learning_rate(s, 1) == doctest::Approx(0.5e-3).epsilon(1e-15));
  CHECK(learning_rate(s, 3) == 1e-3);
  CHECK(learning_rate(s, 4) == 1e-3);
  CHECK(learning_rate(s, 50) == 1e-3);
  s.warmup_steps = 0;
  CHECK(learning_rate(s, 0) == 1e-3);
}

TEST_CASE("lr schedule: linear warmup then cosine decay to min ratio") {
  LrSchedule s;
  s.kind = LrScheduleKind::warmup_cosine;
  s.base_lr = 2e-5;
  s.warmup_steps = 10;
  s.total_steps = 110;
  s.min_lr_ratio = 0.1;
  const double pi = std::acos(-1.0);
  auto closed = [&](int64_t step) {
    const double p = double(step - 10) / 100.0;
    return 2e-5 * (0.1 + 0.9 * 0.5 * (1 + std::cos(pi * p)));
  };
  CHECK(learning_rate(s, 0) == doctest::Approx(2e-6).epsilon(1e-14));
  CHECK(learning_rate(s, 4) == doctest::Approx(1e-5).epsilon(1e-14));
  CHECK(learning_rate(s, 9) == doctest::Approx(2e-5).epsilon(1e-14));
  CHECK(learning_rate(s, 10) == doctest::Approx(2e-5).epsilon(1e-14));
  CHECK(learning_rate(s, 35) == doctest::Approx(closed(35)).epsilon(1e-14));
  CHECK(learning_rate(s, 60) == doctest::Approx(2e-5 * 0.55).epsilon(1e-14));  // halfway: mean of base and min
  CHECK(learning_rate(s, 97) == doctest::Approx(closed(97)).epsilon(1e-14));
  CHECK(learning_rate(s, 110) == doctest::Approx(2e-6).epsilon(1e-14));
  CHECK(learning_rate(s, 1000) == doctest::Approx(2e-6).epsilon(1e-14));
  // monotone non-increasing after warmup
  for (int64_t step = 10; step < 120; ++step) CHECK(learning_rate(s, step + 1) <= learning_rate(s, step));
  // no warmup, no floor
  s.warmup_steps = 0;
  s.total_steps = 4;
  s.min_lr_ratio = 0.0;
  CHECK(learning_rate(s, 0) == 2e-5);
  CHECK(learning_rate(s, 2) == doctest::Approx(1e-5).epsilon(1e-14));
  CHECK(learning_rate(s, 4) == 0.0);
  // warmup == total: warmup, then the floor
  s.warmup_steps = 4;
  s.min_lr_ratio = 0.5;
  CHECK(learning_rate(s, 3) == 2e-5);
  CHECK(learning_rate(s, 4) == doctest::Approx(1e-5).epsilon(1e-15));
}

TEST_CASE("lr schedule: bad parameters are invalid_argument") {
  auto invalid = [](const LrSchedule& s, int64_t step = 0) {
    try {
      learning_rate(s, step);
      return false;
    } catch (const fp8rl::Error& e) {
      return e.status() == fp8rl::Status::invalid_argument;
    }
  };
  LrSchedule s;
  s.kind = LrScheduleKind::warmup_cosine;
  s.base_lr = 1e-4;
  s.warmup_steps = 5;
  s.total_steps = 10;
  CHECK_FALSE(invalid(s));
  CHECK(invalid(s, -1));
  LrSchedule b = s;
  b.base_lr = -1e-4;
  CHECK(invalid(b));
  b = s;
  b.base_lr = std::nan("");
  CHECK(invalid(b));
  b = s;
  b.warmup_steps = 11;
  CHECK(invalid(b));
  b = s;
  b.warmup_steps = -1;
  CHECK(invalid(b));
  b = s;
  b.total_steps = 0;
  b.warmup_steps = 0;
  CHECK(invalid(b));
  b = s;
  b.min_lr_ratio = 1.5;
  CHECK(invalid(b));
  b = s;
  b.kind = static_cast<LrScheduleKind>(7);
  CHECK(invalid(b));
}

}  // namespace
