// Where everything of one chart goes: the plot area, the axes' ranges and
// ticks, the title, the axis labels and the legend. Pure geometry, no pixels;
// write_line_charts_png draws from it, and tests read the plot area from it.
//
// Usage:
//   ChartLayout layout = layout_chart(chart, 640, 420);
//   double px = layout.to_px(x), py = layout.to_py(y);  // data -> pixel center, chart-relative
#pragma once

#include <string>
#include <vector>

#include "tools/plot/axis_ticks.h"
#include "tools/plot/line_chart.h"
#include "tools/plot/raster.h"

namespace fp8rl::tools {

// Sizes in pixels at font scale 1 unless noted.
constexpr int kTitleScale = 2;     // the title's font scale
constexpr int kTickLength = 5;     // tick marks point outward from the axes
constexpr int kTickGap = 3;        // between a tick mark and its label
constexpr int kLegendSwatch = 18;  // length of the colored bar in front of a legend label
constexpr int kLegendGap = 5;      // between a swatch and its label

struct Point {
  int x = 0, y = 0;
};

struct ChartLayout {
  int width = 0, height = 0;  // the chart's cell
  Rect plot;                  // data area; the axes run along its left column and bottom row
  AxisScale x_axis, y_axis;
  std::vector<std::string> x_tick_labels, y_tick_labels;  // one per tick
  int title_y = 0;                                        // top of the title (centered over the plot)
  int x_tick_label_y = 0;                                 // top of the x tick labels
  int x_label_y = 0;                                      // top of the x-axis label (centered under the plot)
  int y_label_x = 0;                                      // left of the rotated y-axis label (centered beside the plot)
  std::vector<Point> legend;  // per series: top-left of its entry (swatch, then label); unused for faint series

  // Data coordinates to pixel centers: lo maps to the plot's first column
  // (last row for y), hi to its last column (first row).
  double to_px(double x) const;
  double to_py(double y) const;
};

// Whether the series has a legend entry (faint series have none).
inline bool in_legend(const Series& series) { return series.style != SeriesStyle::faint; }

// The smallest and largest finite x (or y) over all points of chart whose x
// and y are both finite; false when there is no such point.
bool finite_range(const LineChart& chart, bool of_x, double& lo, double& hi);

// Throws std::invalid_argument when the labels and legend leave less than
// 40 x 40 pixels for the plot area.
ChartLayout layout_chart(const LineChart& chart, int width, int height);

}  // namespace fp8rl::tools
