// A 5x7 bitmap font for printable ASCII (32..126) with two descender rows,
// drawn at integer scales, horizontally or rotated to read bottom to top.
//
// Usage:
//   draw_text(canvas, 10, 10, "loss", kBlack, 2);             // cell top-left at (10, 10)
//   draw_text(canvas, 4, 200, "reward", kBlack, 1, TextDirection::up);
#pragma once

#include <cstdint>
#include <string_view>

#include "tools/plot/raster.h"

namespace fp8rl::tools {

constexpr int kGlyphWidth = 5;    // columns of ink
constexpr int kGlyphRows = 9;     // rows 0..6: capitals sit on row 6 (the baseline); rows 7..8: descenders
constexpr int kGlyphAdvance = 6;  // the ink plus one blank column

// kGlyphRows bytes, top row first; bit 4 is the leftmost column. Characters
// outside 32..126 show as '?'.
const uint8_t* glyph_rows(char c);

// Size in pixels of text drawn horizontally at scale (>= 1): the advance of
// every character but the last, whose trailing blank column is not counted.
int text_width(std::string_view text, int scale);
inline int text_height(int scale) { return kGlyphRows * scale; }

enum class TextDirection {
  right,  // normal left-to-right text
  up,     // rotated 90 degrees counter-clockwise: reads bottom to top (a y-axis label)
};

// Draws text whose bounding box (text_width x text_height, or its transpose
// for up) has its top-left corner at (x, y). Each font pixel becomes a
// scale x scale block.
void draw_text(Canvas& canvas, int x, int y, std::string_view text, Rgb color, int scale = 1,
               TextDirection direction = TextDirection::right);

}  // namespace fp8rl::tools
