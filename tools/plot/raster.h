// An 8-bit RGB canvas with the few primitives a line chart needs: filled
// rectangles and wide, optionally anti-aliased line segments. Every drawing
// call is clipped to the clip rectangle (initially the whole canvas).
//
// Usage:
//   Canvas canvas(640, 420, kWhite);
//   canvas.draw_line(10, 400, 630, 20, {31, 119, 180}, 2.0);
//   encode_png_rgb(canvas.width(), canvas.height(), canvas.pixels().data());
#pragma once

#include <cstdint>
#include <vector>

namespace fp8rl::tools {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};
inline bool operator==(Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }
inline bool operator!=(Rgb a, Rgb b) { return !(a == b); }

constexpr Rgb kWhite{255, 255, 255};
constexpr Rgb kBlack{0, 0, 0};

// Pixel rectangle [x0, x1) x [y0, y1).
struct Rect {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

class Canvas {
 public:
  // Throws std::invalid_argument when width or height is < 1.
  Canvas(int width, int height, Rgb background);

  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<uint8_t>& pixels() const { return pixels_; }  // row-major R G B, top row first
  Rgb pixel(int x, int y) const;                                  // requires 0 <= x < width, 0 <= y < height

  // Later drawing touches only pixels inside rect (intersected with the canvas).
  void set_clip(Rect rect);
  void reset_clip() { set_clip({0, 0, width_, height_}); }

  // Mixes color into pixel (x, y) with weight coverage in [0, 1]; no-op outside the clip.
  void blend(int x, int y, Rgb color, double coverage);
  void fill_rect(Rect rect, Rgb color);
  // A segment of the given width with round caps, so consecutive segments of a
  // polyline join without gaps and a zero-length segment is a dot. Coordinates
  // are pixel centers. With antialias, edge pixels get partial coverage; pixels
  // within (width - 1) / 2 of the segment get exactly color either way.
  void draw_line(double x0, double y0, double x1, double y1, Rgb color, double width, bool antialias = true);

 private:
  int width_, height_;
  Rect clip_;
  std::vector<uint8_t> pixels_;
};

}  // namespace fp8rl::tools
