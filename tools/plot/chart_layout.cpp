#include "tools/plot/chart_layout.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tools/plot/bitmap_font.h"

namespace fp8rl::tools {
namespace {

constexpr int kPad = 8;             // empty border around the chart's content
constexpr int kLabelGap = 6;        // between tick labels and an axis label
constexpr int kLegendSpacing = 16;  // between legend entries
constexpr int kLegendRow = 14;      // height of one legend row
constexpr int kMinPlot = 40;

AxisScale axis_for(const LineChart& chart, bool of_x, int target_ticks) {
  double lo = 0.0, hi = 1.0;
  if (!finite_range(chart, of_x, lo, hi)) return nice_axis(0.0, 1.0, target_ticks);
  return nice_axis(lo, hi, target_ticks);
}

std::vector<std::string> tick_labels(const AxisScale& axis) {
  std::vector<std::string> labels;
  for (double tick : axis.ticks) labels.push_back(format_tick(tick, axis.step));
  return labels;
}

int widest(const std::vector<std::string>& texts) {
  int width = 0;
  for (const std::string& text : texts) width = std::max(width, text_width(text, 1));
  return width;
}

}  // namespace

bool finite_range(const LineChart& chart, bool of_x, double& lo, double& hi) {
  bool any = false;
  for (const Series& series : chart.series) {
    for (size_t i = 0; i < std::min(series.x.size(), series.y.size()); ++i) {
      if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) continue;
      const double v = of_x ? series.x[i] : series.y[i];
      lo = any ? std::min(lo, v) : v;
      hi = any ? std::max(hi, v) : v;
      any = true;
    }
  }
  return any;
}

double ChartLayout::to_px(double x) const {
  // Halves: no overflow for data near +-DBL_MAX.
  return plot.x0 + (x / 2 - x_axis.lo / 2) / (x_axis.hi / 2 - x_axis.lo / 2) * (plot.x1 - 1 - plot.x0);
}

double ChartLayout::to_py(double y) const {
  return (plot.y1 - 1) - (y / 2 - y_axis.lo / 2) / (y_axis.hi / 2 - y_axis.lo / 2) * (plot.y1 - 1 - plot.y0);
}

ChartLayout layout_chart(const LineChart& chart, int width, int height) {
  ChartLayout layout;
  layout.width = width;
  layout.height = height;
  // Tick counts follow the space available: about one per 100 px across, one per 60 px up.
  layout.x_axis = axis_for(chart, true, std::clamp((width - 100) / 100, 2, 8));
  layout.y_axis = axis_for(chart, false, std::clamp((height - 100) / 60, 2, 8));
  layout.x_tick_labels = tick_labels(layout.x_axis);
  layout.y_tick_labels = tick_labels(layout.y_axis);

  // Left to right: [pad][y label][gap][y tick labels][gap][tick] plot [half the last x tick label][pad].
  const int y_label_block = chart.y_label.empty() ? 0 : text_height(1) + kLabelGap;
  layout.y_label_x = kPad;
  layout.plot.x0 = kPad + y_label_block + widest(layout.y_tick_labels) + kTickGap + kTickLength;
  layout.plot.x1 = width - kPad - std::max(kPad, text_width(layout.x_tick_labels.back(), 1) / 2);

  // The legend flows left to right from the plot's left edge, wrapping into rows.
  const bool any_entry = std::any_of(chart.series.begin(), chart.series.end(), in_legend);
  int rows = any_entry ? 1 : 0, cursor = layout.plot.x0;
  std::vector<Point> entries;  // row-relative: x, row index
  for (const Series& series : chart.series) {
    if (!in_legend(series)) {
      entries.push_back({0, 0});
      continue;
    }
    const int entry = kLegendSwatch + kLegendGap + text_width(series.label, 1);
    if (cursor > layout.plot.x0 && cursor + entry > width - kPad) {
      ++rows;
      cursor = layout.plot.x0;
    }
    entries.push_back({cursor, rows - 1});
    cursor += entry + kLegendSpacing;
  }

  // Top to bottom: [pad][title][gap] plot [tick][gap][tick labels][gap][x label][gap][legend rows][pad].
  // Without a title, the top y tick label still needs half its height above the plot.
  layout.title_y = kPad;
  layout.plot.y0 = chart.title.empty() ? kPad + 4 : kPad + text_height(kTitleScale) + kLabelGap;
  int bottom = height - kPad;
  const int legend_top = bottom - rows * kLegendRow;
  if (rows > 0) bottom = legend_top - kLabelGap;
  if (!chart.x_label.empty()) {
    layout.x_label_y = bottom - text_height(1);
    bottom = layout.x_label_y - kLabelGap;
  }
  layout.x_tick_label_y = bottom - text_height(1);
  layout.plot.y1 = layout.x_tick_label_y - kTickGap - kTickLength;  // tick marks start on the row below the plot
  for (const Point& entry : entries) layout.legend.push_back({entry.x, legend_top + entry.y * kLegendRow});

  if (layout.plot.x1 - layout.plot.x0 < kMinPlot || layout.plot.y1 - layout.plot.y0 < kMinPlot) {
    throw std::invalid_argument("write_line_charts_png: a " + std::to_string(width) + "x" + std::to_string(height) +
                                " chart leaves no room for the plot of \"" + chart.title +
                                "\" (too many legend entries or too small an image)");
  }
  return layout;
}

}  // namespace fp8rl::tools
