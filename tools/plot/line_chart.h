// Line charts as a PNG, for `fp8rl compare`: one chart per metric, side by
// side, each series a polyline. No dependencies beyond the C++ library.
//
// Usage:
//   LineChart reward{"reward", "step", "mean reward", {{"bf16", steps, bf16_reward}, {"fp8", steps, fp8_reward}}};
//   LineChart kl{"KL to reference", "step", "KL", {{"bf16", steps, bf16_kl}, {"fp8", steps, fp8_kl}}};
//   write_line_charts_png("compare.png", {reward, kl});   // 1280 x 420
#pragma once

#include <string>
#include <vector>

namespace fp8rl::tools {

// How a series is drawn. faint: a thin line in a pale tint of its color and
// no legend entry (per-seed curves behind their mean); points: a dot per
// point and no line (a scatter plot).
enum class SeriesStyle { line, faint, points };

// One polyline. x.size() == y.size(); points where x or y is NaN (or
// infinite) are skipped: the line joins the neighbouring points. color: a
// palette index (tools/plot/palette.h), or -1 for the series' own position
// in the chart, so faint series can share the color of the mean they belong to.
struct Series {
  std::string label;
  std::vector<double> x, y;
  SeriesStyle style = SeriesStyle::line;
  int color = -1;
};

struct LineChart {
  std::string title, x_label, y_label;  // printable ASCII; other bytes show as '?'
  std::vector<Series> series;
};

// Renders the charts side by side into one 8-bit RGB PNG of
// (width_per_chart * charts.size()) x height pixels: white background, axes
// with tick marks and numeric tick labels (nicely rounded values), the title,
// axis labels, a legend under the axis (one colored swatch + label per
// series), one polyline per series. Series i gets palette color i
// (tools/plot/palette.h), the same in every chart, unless it names its own;
// 8 distinct colors, then they repeat. A series with a single point is drawn
// as a dot; a constant series as a horizontal line mid-axis. Faint series are
// drawn first, so every other series lies on top of them.
//
// Throws std::invalid_argument for bad input: no charts, x/y size mismatch,
// width_per_chart outside [200, 8192] or height outside [150, 8192], a total
// width over 32768, or labels and legend that leave no room for the plot.
// Throws std::runtime_error on I/O failure. The file is written atomically
// (temporary file + rename): path is either untouched or the complete image.
void write_line_charts_png(const std::string& path, const std::vector<LineChart>& charts, int width_per_chart = 640,
                           int height = 420);

}  // namespace fp8rl::tools
