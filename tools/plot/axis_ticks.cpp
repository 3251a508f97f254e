#include "tools/plot/axis_ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fp8rl::tools {
namespace {

// The nice step (1, 2 or 5 times a power of ten) nearest to raw.
double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  const double nice = fraction < 1.5 ? 1.0 : fraction < 3.0 ? 2.0 : fraction < 7.0 ? 5.0 : 10.0;
  return nice * magnitude;
}

// Removes a '+' and leading zeros from the exponent: "2e-05" -> "2e-5", "1.5e+08" -> "1.5e8".
std::string compact_exponent(std::string text) {
  const size_t e = text.find('e');
  if (e == std::string::npos) return text;
  std::string mantissa = text.substr(0, e), exponent = text.substr(e + 1);
  const bool negative = !exponent.empty() && exponent[0] == '-';
  exponent.erase(0, exponent.find_first_not_of("+-0"));
  return mantissa + "e" + (negative ? "-" : "") + (exponent.empty() ? "0" : exponent);
}

}  // namespace

AxisScale nice_axis(double data_min, double data_max, int target_ticks) {
  if (!std::isfinite(data_min) || !std::isfinite(data_max) || data_min > data_max) {
    data_min = 0.0;
    data_max = 1.0;
  }
  // Spans below ~1e-9 of the magnitude cannot be ticked in double precision: treat as constant.
  const double magnitude = std::max(std::fabs(data_min), std::fabs(data_max));
  if (data_max - data_min <= magnitude * 1e-9) {
    const double pad = magnitude > 0.0 ? magnitude * 0.1 : 1.0;
    data_min -= pad;
    data_max += pad;
  }
  const int target = std::clamp(target_ticks, 2, 20);
  AxisScale axis;
  const double span = data_max - data_min;
  if (!std::isfinite(span)) {  // within a factor 2 of DBL_MAX: no room for rounding outward
    axis.lo = data_min;
    axis.hi = data_max;
    axis.step = data_max / 2 - data_min / 2;
    axis.ticks = {data_min, data_max};
    return axis;
  }
  axis.step = nice_step(span / (target - 1));
  // The epsilon keeps 0.6 / 0.2 = 2.9999999999999996 from widening the range by a whole step.
  const double first = std::floor(data_min / axis.step + 1e-9);
  const double last = std::ceil(data_max / axis.step - 1e-9);
  for (double k = first; k <= last; k += 1.0) {
    const double value = k * axis.step;  // k * step, not lo + i * step: no accumulated error
    axis.ticks.push_back(std::fabs(value) < axis.step * 1e-9 ? 0.0 : value);
  }
  axis.lo = axis.ticks.front();
  axis.hi = axis.ticks.back();
  return axis;
}

std::string format_tick(double value, double step) {
  char buffer[64];
  if (value == 0.0 || !std::isfinite(value)) {
    std::snprintf(buffer, sizeof buffer, "%g", value == 0.0 ? 0.0 : value);
    return buffer;
  }
  const double magnitude = std::fabs(value);
  if (!(step > 0.0) || !std::isfinite(step)) step = magnitude;
  if (step >= 1e-4 && magnitude < 1e7) {
    const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
  }
  // Significant digits: from the value's leading digit down to the step's.
  const double digits = std::floor(std::log10(magnitude)) - std::floor(std::log10(step) + 1e-9) + 1;
  std::snprintf(buffer, sizeof buffer, "%.*g", static_cast<int>(std::clamp(digits, 1.0, 15.0)), value);
  return compact_exponent(buffer);
}

}  // namespace fp8rl::tools
