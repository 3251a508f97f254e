// Nice axis ranges and tick labels.
#include "tools/plot/axis_ticks.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace {

using namespace fp8rl::tools;

void check_well_formed(const AxisScale& axis, double data_min, double data_max) {
  REQUIRE(axis.ticks.size() >= 2);
  CHECK(axis.lo < axis.hi);
  CHECK(axis.lo <= data_min);
  CHECK(axis.hi >= data_max);
  CHECK(axis.ticks.front() == axis.lo);
  CHECK(axis.ticks.back() == axis.hi);
  for (size_t i = 1; i < axis.ticks.size(); ++i) {
    CHECK(axis.ticks[i] - axis.ticks[i - 1] == doctest::Approx(axis.step));
  }
}

}  // namespace

TEST_CASE("axis: nice ranges and steps") {
  const AxisScale unit = nice_axis(0.0, 1.0, 5);
  CHECK(unit.step == doctest::Approx(0.2));
  CHECK(unit.ticks == std::vector<double>{0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0});
  check_well_formed(unit, 0.0, 1.0);

  const AxisScale wide = nice_axis(0.13, 97.0, 6);
  CHECK(wide.lo == 0.0);
  CHECK(wide.hi == 100.0);
  CHECK(wide.step == 20.0);

  const AxisScale negative = nice_axis(-0.6, 0.6, 7);  // 0.6 / 0.2 is 2.9999999999999996: no extra step
  CHECK(negative.lo == doctest::Approx(-0.6));
  CHECK(negative.hi == doctest::Approx(0.6));
  CHECK(std::find(negative.ticks.begin(), negative.ticks.end(), 0.0) != negative.ticks.end());
  check_well_formed(negative, -0.6, 0.6);

  check_well_formed(nice_axis(1e-7, 3e-6, 5), 1e-7, 3e-6);
  check_well_formed(nice_axis(-123456.0, 9e9, 8), -123456.0, 9e9);
}

TEST_CASE("axis: degenerate ranges never divide by zero") {
  const AxisScale constant = nice_axis(5.0, 5.0, 5);
  check_well_formed(constant, 5.0, 5.0);
  CHECK((constant.lo + constant.hi) / 2 == doctest::Approx(5.0));  // the value sits mid-axis

  check_well_formed(nice_axis(0.0, 0.0, 5), 0.0, 0.0);
  check_well_formed(nice_axis(-3e-12, -3e-12, 5), -3e-12, -3e-12);
  check_well_formed(nice_axis(1e10, 1e10 + 1e-3, 5), 1e10, 1e10 + 1e-3);  // below double resolution for ticks

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const AxisScale fallback = nice_axis(nan, 1.0, 5);
  CHECK(fallback.lo == 0.0);
  CHECK(fallback.hi == 1.0);
  CHECK(nice_axis(2.0, 1.0, 5).hi == 1.0);  // inverted: the same fallback

  const AxisScale huge = nice_axis(-1e308, 1e308, 5);  // the span overflows
  CHECK(huge.lo == -1e308);
  CHECK(huge.hi == 1e308);
  CHECK(std::isfinite(huge.step));
}

TEST_CASE("axis: tick labels") {
  CHECK(format_tick(0.0, 0.2) == "0");
  CHECK(format_tick(0.6000000000000001, 0.2) == "0.6");
  CHECK(format_tick(-0.4, 0.2) == "-0.4");
  CHECK(format_tick(0.05, 0.05) == "0.05");
  CHECK(format_tick(100.0, 20.0) == "100");
  CHECK(format_tick(1.5, 0.5) == "1.5");
  CHECK(format_tick(2e-5, 1e-5) == "2e-5");
  CHECK(format_tick(1.5e8, 5e7) == "1.5e8");
  CHECK(format_tick(3e9, 1e9) == "3e9");
  CHECK(format_tick(7.0, 0.0) == "7");  // a bad step falls back to the value's own scale
}
