// Draws each chart into its own cell of one canvas, from its ChartLayout:
// grid, series, axes with ticks and labels, title, legend; then one PNG.
#include "tools/plot/line_chart.h"

#include <cmath>
#include <stdexcept>

#include "tools/plot/atomic_file.h"
#include "tools/plot/bitmap_font.h"
#include "tools/plot/chart_layout.h"
#include "tools/plot/palette.h"
#include "tools/plot/png_writer.h"
#include "tools/plot/raster.h"

namespace fp8rl::tools {
namespace {

constexpr double kLineWidth = 2.0;
constexpr double kFaintLineWidth = 1.0;
constexpr double kFaintShare = 0.35;  // of the series color over white
constexpr double kDotWidth = 6.0;     // a series with one point
constexpr int kMinWidth = 200, kMinHeight = 150, kMaxSide = 8192, kMaxTotalWidth = 32768;

void validate(const std::vector<LineChart>& charts, int width_per_chart, int height) {
  auto fail = [](const std::string& why) { throw std::invalid_argument("write_line_charts_png: " + why); };
  if (charts.empty()) fail("no charts");
  if (width_per_chart < kMinWidth || width_per_chart > kMaxSide || height < kMinHeight || height > kMaxSide) {
    fail("chart size " + std::to_string(width_per_chart) + "x" + std::to_string(height) + " outside [" +
         std::to_string(kMinWidth) + ", " + std::to_string(kMaxSide) + "] x [" + std::to_string(kMinHeight) + ", " +
         std::to_string(kMaxSide) + "]");
  }
  if (charts.size() > static_cast<size_t>(kMaxTotalWidth / width_per_chart)) {
    fail(std::to_string(charts.size()) + " charts of width " + std::to_string(width_per_chart) + " exceed " +
         std::to_string(kMaxTotalWidth) + " pixels");
  }
  for (const LineChart& chart : charts) {
    for (const Series& series : chart.series) {
      if (series.x.size() != series.y.size()) {
        fail("series \"" + series.label + "\" of chart \"" + chart.title + "\" has " + std::to_string(series.x.size()) +
             " x values but " + std::to_string(series.y.size()) + " y values");
      }
    }
  }
}

// A pale tint of color: `share` of it over white.
Rgb tint(Rgb color, double share) {
  auto mix = [share](uint8_t c) { return static_cast<uint8_t>(std::lround(255 - share * (255 - c))); };
  return {mix(color.r), mix(color.g), mix(color.b)};
}

Rgb color_of(const Series& series, size_t index) {
  return series_color(series.color >= 0 ? static_cast<size_t>(series.color) : index);
}

void draw_points(Canvas& canvas, const ChartLayout& layout, const Series& series, Rgb color, int left) {
  for (size_t i = 0; i < series.x.size(); ++i) {
    if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) continue;
    const double px = left + layout.to_px(series.x[i]), py = layout.to_py(series.y[i]);
    canvas.draw_line(px, py, px, py, color, kDotWidth);
  }
}

void draw_series(Canvas& canvas, const ChartLayout& layout, const Series& series, Rgb color, int left) {
  if (series.style == SeriesStyle::points) return draw_points(canvas, layout, series, color, left);
  const bool faint = series.style == SeriesStyle::faint;
  if (faint) color = tint(color, kFaintShare);
  const double width = faint ? kFaintLineWidth : kLineWidth;
  bool have_previous = false;
  double px0 = 0.0, py0 = 0.0;
  size_t points = 0;
  for (size_t i = 0; i < series.x.size(); ++i) {
    if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) continue;  // skipped: neighbours join
    const double px = left + layout.to_px(series.x[i]), py = layout.to_py(series.y[i]);
    if (have_previous) canvas.draw_line(px0, py0, px, py, color, width);
    px0 = px;
    py0 = py;
    have_previous = true;
    ++points;
  }
  if (points == 1) canvas.draw_line(px0, py0, px0, py0, color, kDotWidth);
}

void draw_axes(Canvas& canvas, const ChartLayout& layout, int left) {
  const Rect& plot = layout.plot;
  const int axis_x = left + plot.x0, axis_y = plot.y1 - 1;
  for (size_t i = 0; i < layout.x_axis.ticks.size(); ++i) {
    const int x = left + static_cast<int>(std::lround(layout.to_px(layout.x_axis.ticks[i])));
    canvas.fill_rect({x, axis_y + 1, x + 1, axis_y + 1 + kTickLength}, kAxisColor);
    const std::string& label = layout.x_tick_labels[i];
    draw_text(canvas, x - text_width(label, 1) / 2, layout.x_tick_label_y, label, kTextColor);
  }
  for (size_t i = 0; i < layout.y_axis.ticks.size(); ++i) {
    const int y = static_cast<int>(std::lround(layout.to_py(layout.y_axis.ticks[i])));
    canvas.fill_rect({axis_x - kTickLength, y, axis_x, y + 1}, kAxisColor);
    const std::string& label = layout.y_tick_labels[i];
    // Right-aligned before the tick; the cap height (7 rows) centered on it.
    draw_text(canvas, axis_x - kTickLength - kTickGap - text_width(label, 1), y - 3, label, kTextColor);
  }
  canvas.fill_rect({axis_x, plot.y0, axis_x + 1, plot.y1}, kAxisColor);
  canvas.fill_rect({axis_x, axis_y, left + plot.x1, axis_y + 1}, kAxisColor);
}

void draw_chart(Canvas& canvas, const LineChart& chart, const ChartLayout& layout, int left) {
  const Rect& plot = layout.plot;
  canvas.set_clip({left, 0, left + layout.width, layout.height});  // nothing spills into a neighbour

  for (double tick : layout.x_axis.ticks) {
    const int x = left + static_cast<int>(std::lround(layout.to_px(tick)));
    canvas.fill_rect({x, plot.y0, x + 1, plot.y1}, kGridColor);
  }
  for (double tick : layout.y_axis.ticks) {
    const int y = static_cast<int>(std::lround(layout.to_py(tick)));
    canvas.fill_rect({left + plot.x0, y, left + plot.x1, y + 1}, kGridColor);
  }
  draw_axes(canvas, layout, left);

  // Series after the axes so data on an axis stays visible; the clip leaves
  // room for half a line width on the plot's edges.
  const int margin = static_cast<int>(std::ceil(kDotWidth / 2));
  canvas.set_clip({left + plot.x0 - margin, plot.y0 - margin, left + plot.x1 + margin, plot.y1 + margin});
  for (bool faint_pass : {true, false}) {
    for (size_t i = 0; i < chart.series.size(); ++i) {
      const Series& series = chart.series[i];
      if ((series.style == SeriesStyle::faint) == faint_pass)
        draw_series(canvas, layout, series, color_of(series, i), left);
    }
  }
  canvas.set_clip({left, 0, left + layout.width, layout.height});

  const int plot_center = left + (plot.x0 + plot.x1) / 2;
  const int title_x = plot_center - text_width(chart.title, kTitleScale) / 2;
  draw_text(canvas, std::max(left, title_x), layout.title_y, chart.title, kTextColor, kTitleScale);
  draw_text(canvas, plot_center - text_width(chart.x_label, 1) / 2, layout.x_label_y, chart.x_label, kTextColor);
  draw_text(canvas, left + layout.y_label_x, (plot.y0 + plot.y1) / 2 - text_width(chart.y_label, 1) / 2, chart.y_label,
            kTextColor, 1, TextDirection::up);

  for (size_t i = 0; i < chart.series.size(); ++i) {
    if (!in_legend(chart.series[i])) continue;
    const Point entry{left + layout.legend[i].x, layout.legend[i].y};
    const int mid = entry.y + 3;  // the label's cap-height middle
    canvas.fill_rect({entry.x, mid - 1, entry.x + kLegendSwatch, mid + 2}, color_of(chart.series[i], i));
    draw_text(canvas, entry.x + kLegendSwatch + kLegendGap, entry.y, chart.series[i].label, kTextColor);
  }
  canvas.reset_clip();
}

}  // namespace

void write_line_charts_png(const std::string& path, const std::vector<LineChart>& charts, int width_per_chart,
                           int height) {
  validate(charts, width_per_chart, height);
  std::vector<ChartLayout> layouts;  // all laid out first: a chart that does not fit fails before any drawing
  for (const LineChart& chart : charts) layouts.push_back(layout_chart(chart, width_per_chart, height));

  Canvas canvas(width_per_chart * static_cast<int>(charts.size()), height, kWhite);
  for (size_t i = 0; i < charts.size(); ++i) {
    draw_chart(canvas, charts[i], layouts[i], width_per_chart * static_cast<int>(i));
  }
  write_file_atomically(path, encode_png_rgb(canvas.width(), canvas.height(), canvas.pixels().data()));
}

}  // namespace fp8rl::tools
