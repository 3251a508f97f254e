// Whole charts: written with write_line_charts_png, read back with the
// independent decoder (tests/plot/png_oracle.py), checked pixel by pixel
// against the geometry layout_chart reports.
#include "tools/plot/line_chart.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "tests/plot/plot_test_support.h"
#include "tools/plot/chart_layout.h"
#include "tools/plot/palette.h"

namespace {

using namespace fp8rl::tools;
using fp8rl::test::decode_with_oracle;
using fp8rl::test::DecodedImage;
using fp8rl::test::pixels_of;
using fp8rl::test::TempDir;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Series line(const std::string& label, double slope, double intercept) {
  Series series{label, {}, {}};
  for (int i = 0; i <= 100; ++i) {
    series.x.push_back(i / 100.0);
    series.y.push_back(intercept + slope * i / 100.0);
  }
  return series;
}

// The plot area of chart `index` in image coordinates, grown by `margin`.
Rect plot_rect(const ChartLayout& layout, int index, int margin = 0) {
  const int left = index * layout.width;
  return {left + layout.plot.x0 - margin, layout.plot.y0 - margin, left + layout.plot.x1 + margin,
          layout.plot.y1 + margin};
}

DecodedImage render(const TempDir& dir, const std::vector<LineChart>& charts, int width = 640, int height = 420) {
  const std::string path = dir.file("chart.png");
  write_line_charts_png(path, charts, width, height);
  return decode_with_oracle(path);
}

}  // namespace

TEST_CASE("line chart: size, white background, palette colors, lines where the data is") {
  TempDir dir;
  const LineChart rising{"rising", "x", "y", {line("y = x", 1.0, 0.0), line("y = 1 - x", -1.0, 1.0)}};
  const LineChart other{"other", "step", "value", {line("a", 0.5, 0.2), line("b", 0.1, 0.3)}};
  const DecodedImage image = render(dir, {rising, other});
  REQUIRE(image.width == 2 * 640);
  REQUIRE(image.height == 420);
  for (const auto& [x, y] : {std::pair{0, 0}, {1279, 0}, {0, 419}, {1279, 419}, {639, 200}, {640, 5}}) {
    CHECK(image.at(x, y) == kWhite);
  }

  // The same series index has the same color in both charts, in the plot and in the legend.
  for (int chart = 0; chart < 2; ++chart) {
    const ChartLayout layout = layout_chart(chart == 0 ? rising : other, 640, 420);
    for (size_t s = 0; s < 2; ++s) {
      CAPTURE(chart);
      CAPTURE(s);
      CHECK(pixels_of(image, series_color(s), plot_rect(layout, chart, 3)).size() > 300);
      const Rect legend_row{chart * 640, layout.plot.y1 + 10, chart * 640 + 640, 420};
      CHECK(pixels_of(image, series_color(s), legend_row).size() >= 18);  // the swatch
    }
  }

  // y = x spans the axes corner to corner (nice range [0, 1] both ways):
  // every blue pixel in the plot lies within 2 px of the diagonal, and the
  // diagonal is blue all along (except where y = 1 - x crosses on top of it).
  const ChartLayout layout = layout_chart(rising, 640, 420);
  CHECK(layout.x_axis.lo == 0.0);
  CHECK(layout.x_axis.hi == 1.0);
  const double ax = layout.to_px(0), ay = layout.to_py(0), bx = layout.to_px(1), by = layout.to_py(1);
  const double length = std::hypot(bx - ax, by - ay);
  const auto blue = pixels_of(image, series_color(0), plot_rect(layout, 0, 3));
  for (const auto& p : blue) {
    const double distance = std::fabs((bx - ax) * (ay - p.y) - (ax - p.x) * (by - ay)) / length;
    CHECK_MESSAGE(distance <= 2.0, "blue pixel (" << p.x << ", " << p.y << ") off the diagonal");
  }
  for (int i = 0; i <= 20; ++i) {
    if (i == 10) continue;  // the crossing
    const double x = ax + (bx - ax) * i / 20.0, y = ay + (by - ay) * i / 20.0;
    const Rect near{static_cast<int>(x) - 2, static_cast<int>(y) - 2, static_cast<int>(x) + 3, static_cast<int>(y) + 3};
    CHECK_MESSAGE(!pixels_of(image, series_color(0), near).empty(), "no blue near t = " << i / 20.0);
  }
  // The axes: a black left column and bottom row.
  CHECK(image.at(layout.plot.x0, (layout.plot.y0 + layout.plot.y1) / 2) == kAxisColor);
  CHECK(image.at((layout.plot.x0 + layout.plot.x1) / 2 + 640, layout.plot.y1 - 1) == kAxisColor);
}

TEST_CASE("line chart: NaN points are skipped, the neighbours joined") {
  TempDir dir;
  const Series gappy{"gappy", {0, 1, 2, 3, kNaN}, {0, kNaN, 1, 2, 100}};
  const LineChart chart{"nan", "", "", {gappy}};
  const ChartLayout layout = layout_chart(chart, 640, 420);
  CHECK(layout.x_axis.lo == 0.0);
  CHECK(layout.x_axis.hi == 3.0);
  CHECK(layout.y_axis.lo == 0.0);
  CHECK(layout.y_axis.hi == 2.0);  // 100 has a NaN x: not part of the range
  const DecodedImage image = render(dir, {chart});
  // The segment from (0, 0) to (2, 1) passes through (1, 0.5).
  const int x = static_cast<int>(std::lround(layout.to_px(1))), y = static_cast<int>(std::lround(layout.to_py(0.5)));
  CHECK(!pixels_of(image, series_color(0), {x - 1, y - 1, x + 2, y + 2}).empty());
}

TEST_CASE("line chart: a single point and a constant series render without dividing by zero") {
  TempDir dir;
  const LineChart single{"single", "x", "y", {{"one", {7.0}, {-2.5}}}};
  const LineChart constant{"constant", "x", "y", {{"flat", {0, 1, 2, 3}, {4, 4, 4, 4}}}};
  const LineChart empty{"empty", "x", "y", {{"none", {}, {}}, {"all NaN", {kNaN}, {1.0}}}};
  const DecodedImage image = render(dir, {single, constant, empty});

  const ChartLayout one = layout_chart(single, 640, 420);
  CHECK(one.x_axis.lo < 7.0);
  CHECK(one.x_axis.hi > 7.0);
  const int px = static_cast<int>(std::lround(one.to_px(7.0))), py = static_cast<int>(std::lround(one.to_py(-2.5)));
  CHECK(image.at(px, py) == series_color(0));  // the dot

  const ChartLayout flat = layout_chart(constant, 640, 420);
  const auto pixels = pixels_of(image, series_color(0), plot_rect(flat, 1));
  REQUIRE(!pixels.empty());
  int min_x = pixels[0].x, max_x = min_x, min_y = pixels[0].y, max_y = min_y;
  for (const auto& p : pixels) {
    min_x = std::min(min_x, p.x), max_x = std::max(max_x, p.x);
    min_y = std::min(min_y, p.y), max_y = std::max(max_y, p.y);
  }
  CHECK(max_y - min_y <= 1);  // a horizontal line
  CHECK(std::abs(min_y - flat.to_py(4.0)) <= 1.0);
  CHECK(std::abs((min_y + max_y) / 2.0 - (flat.plot.y0 + flat.plot.y1) / 2.0) <= 2.0);  // mid-axis
  CHECK(max_x - min_x >= flat.plot.x1 - flat.plot.x0 - 4);                              // across the plot

  const ChartLayout nothing = layout_chart(empty, 640, 420);
  CHECK(nothing.x_axis.lo == 0.0);
  CHECK(nothing.x_axis.hi == 1.0);
  CHECK(pixels_of(image, series_color(0), plot_rect(nothing, 2)).empty());
}

TEST_CASE("line chart: data near the largest doubles still maps into the plot") {
  TempDir dir;
  const LineChart extreme{"extreme", "x", "y", {{"huge", {-1e308, 0, 1e308}, {1e308, -1e308, 1e308}}}};
  const ChartLayout layout = layout_chart(extreme, 640, 420);
  CHECK(layout.to_px(-1e308) == doctest::Approx(layout.plot.x0));
  CHECK(layout.to_py(1e308) == doctest::Approx(layout.plot.y0));
  const DecodedImage image = render(dir, {extreme});
  CHECK(pixels_of(image, series_color(0), plot_rect(layout, 0)).size() > 300);
}

TEST_CASE("line chart: bad input throws and leaves no file") {
  TempDir dir;
  const std::string path = dir.file("bad.png");
  const LineChart ok{"ok", "x", "y", {line("a", 1.0, 0.0)}};
  CHECK_THROWS_AS(write_line_charts_png(path, {}), std::invalid_argument);
  CHECK_THROWS_AS(write_line_charts_png(path, {{"t", "x", "y", {{"a", {1, 2}, {1}}}}}), std::invalid_argument);
  CHECK_THROWS_AS(write_line_charts_png(path, {ok}, 10, 420), std::invalid_argument);
  CHECK_THROWS_AS(write_line_charts_png(path, {ok}, 640, 10), std::invalid_argument);
  CHECK_THROWS_AS(write_line_charts_png(path, {ok}, -640, 420), std::invalid_argument);
  CHECK_THROWS_AS(write_line_charts_png(path, std::vector<LineChart>(100, ok), 640, 420), std::invalid_argument);
  LineChart crowded{"crowded", "x", "y", {}};
  for (int i = 0; i < 40; ++i) crowded.series.push_back({"a rather long legend label", {0}, {0}});
  CHECK_THROWS_AS(write_line_charts_png(path, {crowded}, 200, 150), std::invalid_argument);
  CHECK(!std::filesystem::exists(path));

  CHECK_THROWS_AS(write_line_charts_png(dir.file("missing/chart.png"), {ok}), std::runtime_error);
}

TEST_CASE("line chart: series past the eighth reuse the palette") {
  CHECK(series_color(8) == series_color(0));
  for (size_t i = 0; i < 8; ++i) {
    for (size_t j = i + 1; j < 8; ++j) CHECK(series_color(i) != series_color(j));
  }
}

TEST_CASE("line chart: faint series are pale and out of the legend, point series are dots without lines") {
  TempDir dir;
  Series faint{"", {0, 1}, {0.25, 0.25}, SeriesStyle::faint, 1};
  Series mean{"mean", {0, 1}, {0.75, 0.75}, SeriesStyle::line, 1};
  Series dots{"dots", {0.2, 0.8}, {0.5, 0.5}, SeriesStyle::points, 2};
  const LineChart chart{"styles", "x", "y", {faint, mean, dots}};
  const DecodedImage image = render(dir, {chart});
  const ChartLayout layout = layout_chart(chart, 640, 420);
  const Rgb orange = series_color(1), green = series_color(2);

  // The faint line: a blend of white and a 35% tint of orange, never orange itself.
  const int faint_y = static_cast<int>(std::lround(layout.to_py(0.25)));
  const int mid_x = static_cast<int>(std::lround(layout.to_px(0.5)));
  const Rgb pale = image.at(mid_x, faint_y);
  CHECK(pale != kWhite);
  CHECK(pale.r == 255);  // orange's red is 255: white and any tint of it keep it
  const double share_g = (255.0 - pale.g) / (255 - orange.g), share_b = (255.0 - pale.b) / (255 - orange.b);
  CHECK(share_g == doctest::Approx(share_b).epsilon(0.1));
  CHECK(share_g <= 0.36);  // at most the 35% tint (antialiased edges are paler still)
  CHECK(share_g >= 0.1);
  CHECK(pixels_of(image, orange, {layout.plot.x0, faint_y - 3, layout.plot.x1, faint_y + 4}).empty());
  // The mean's line is orange, as is its legend swatch, the first entry (the faint series has none).
  CHECK(pixels_of(image, orange, plot_rect(layout, 0)).size() > 300);
  CHECK(layout.legend[1].x == layout.plot.x0);
  CHECK(layout.legend[2].x > layout.legend[1].x);
  const Rect legend_row{0, layout.plot.y1 + 10, 640, 420};
  CHECK(pixels_of(image, orange, legend_row).size() >= 18);
  CHECK(pixels_of(image, green, legend_row).size() >= 18);
  // The points: a green dot at each, nothing green between them.
  for (double x : {0.2, 0.8}) {
    const int px = static_cast<int>(std::lround(layout.to_px(x))),
              py = static_cast<int>(std::lround(layout.to_py(0.5)));
    CHECK(!pixels_of(image, green, {px - 2, py - 2, px + 3, py + 3}).empty());
  }
  const int py = static_cast<int>(std::lround(layout.to_py(0.5)));
  CHECK(pixels_of(image, green, {mid_x - 20, py - 5, mid_x + 20, py + 5}).empty());
}
