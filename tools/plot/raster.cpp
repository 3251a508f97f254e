#include "tools/plot/raster.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fp8rl::tools {
namespace {

// Distance from point p to the segment a-b (a point when a == b).
double segment_distance(double px, double py, double ax, double ay, double bx, double by) {
  const double dx = bx - ax, dy = by - ay;
  const double length_sq = dx * dx + dy * dy;
  double t = 0.0;
  if (length_sq > 0.0) t = std::clamp(((px - ax) * dx + (py - ay) * dy) / length_sq, 0.0, 1.0);
  return std::hypot(px - (ax + t * dx), py - (ay + t * dy));
}

uint8_t mix(uint8_t under, uint8_t over, double coverage) {
  return static_cast<uint8_t>(std::lround(under + (over - under) * coverage));
}

}  // namespace

Canvas::Canvas(int width, int height, Rgb background) : width_(width), height_(height) {
  if (width < 1 || height < 1) {
    throw std::invalid_argument("Canvas: bad size " + std::to_string(width) + "x" + std::to_string(height));
  }
  pixels_.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = background.r;
    pixels_[i + 1] = background.g;
    pixels_[i + 2] = background.b;
  }
  reset_clip();
}

Rgb Canvas::pixel(int x, int y) const {
  const size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Canvas::set_clip(Rect rect) {
  clip_ = {std::max(rect.x0, 0), std::max(rect.y0, 0), std::min(rect.x1, width_), std::min(rect.y1, height_)};
}

void Canvas::blend(int x, int y, Rgb color, double coverage) {
  if (x < clip_.x0 || x >= clip_.x1 || y < clip_.y0 || y >= clip_.y1 || !(coverage > 0.0)) return;
  coverage = std::min(coverage, 1.0);
  uint8_t* p = &pixels_[(static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3];
  p[0] = mix(p[0], color.r, coverage);
  p[1] = mix(p[1], color.g, coverage);
  p[2] = mix(p[2], color.b, coverage);
}

void Canvas::fill_rect(Rect rect, Rgb color) {
  for (int y = std::max(rect.y0, clip_.y0); y < std::min(rect.y1, clip_.y1); ++y) {
    for (int x = std::max(rect.x0, clip_.x0); x < std::min(rect.x1, clip_.x1); ++x) blend(x, y, color, 1.0);
  }
}

void Canvas::draw_line(double x0, double y0, double x1, double y1, Rgb color, double width, bool antialias) {
  if (!std::isfinite(x0) || !std::isfinite(y0) || !std::isfinite(x1) || !std::isfinite(y1)) return;
  const double half = std::max(width, 1.0) / 2.0;
  // Only pixels whose center lies within half + 0.5 of the segment can be touched.
  // Clamping in double first keeps the int conversion defined for far-away points.
  const double reach = half + 0.5;
  auto bound = [](double v, int lo, int hi) { return static_cast<int>(std::clamp(v, double(lo), double(hi))); };
  const int bx0 = bound(std::floor(std::min(x0, x1) - reach), clip_.x0, clip_.x1);
  const int bx1 = bound(std::ceil(std::max(x0, x1) + reach), clip_.x0 - 1, clip_.x1 - 1);
  const int by0 = bound(std::floor(std::min(y0, y1) - reach), clip_.y0, clip_.y1);
  const int by1 = bound(std::ceil(std::max(y0, y1) + reach), clip_.y0 - 1, clip_.y1 - 1);
  for (int y = by0; y <= by1; ++y) {
    for (int x = bx0; x <= bx1; ++x) {
      const double d = segment_distance(x, y, x0, y0, x1, y1);
      // Coverage of a unit pixel by the band |d| <= half, approximated linearly across the pixel.
      const double coverage = antialias ? std::clamp(reach - d, 0.0, 1.0) : (d <= half ? 1.0 : 0.0);
      blend(x, y, color, coverage);
    }
  }
}

}  // namespace fp8rl::tools
