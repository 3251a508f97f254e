// Axis ranges with "nice" ticks: steps of 1, 2 or 5 times a power of ten,
// and tick labels with just enough digits to tell neighbouring ticks apart.
//
// Usage:
//   AxisScale axis = nice_axis(0.13, 97.0, 6);  // lo 0, hi 100, step 20, ticks 0 20 40 60 80 100
//   format_tick(axis.ticks[1], axis.step);      // "20"
#pragma once

#include <string>
#include <vector>

namespace fp8rl::tools {

struct AxisScale {
  double lo = 0.0, hi = 1.0;  // the axis range: covers the data, lo < hi
  double step = 0.2;          // distance between ticks
  std::vector<double> ticks;  // lo, lo + step, ..., hi (ascending, at least 2)
};

// The axis for data in [data_min, data_max] with about target_ticks ticks
// (clamped to [2, 20]). The range is widened outward to multiples of the step.
// A zero-width range is widened around its value (so a constant series draws
// mid-axis); a non-finite bound or data_min > data_max gives [0, 1].
AxisScale nice_axis(double data_min, double data_max, int target_ticks = 5);

// A tick label: fixed point with the step's decimals ("0.25" is never a
// step, so "0.2", "0.05", "100"), or compact scientific notation ("2e-5",
// "1.5e+8") for very small steps or very large values.
std::string format_tick(double value, double step);

}  // namespace fp8rl::tools
