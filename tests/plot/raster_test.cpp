// The canvas primitives and the bitmap font.
#include "tools/plot/raster.h"

#include <doctest/doctest.h>

#include <limits>
#include <stdexcept>

#include "tools/plot/bitmap_font.h"

namespace {

using namespace fp8rl::tools;

constexpr Rgb kRed{200, 0, 0};

int count_color(const Canvas& canvas, Rgb color) {
  int n = 0;
  for (int y = 0; y < canvas.height(); ++y) {
    for (int x = 0; x < canvas.width(); ++x) n += canvas.pixel(x, y) == color;
  }
  return n;
}

}  // namespace

TEST_CASE("raster: fill_rect and the clip") {
  Canvas canvas(10, 8, kWhite);
  CHECK(count_color(canvas, kWhite) == 80);
  canvas.fill_rect({-5, -5, 2, 3}, kRed);  // clipped by the canvas: 2 x 3
  CHECK(count_color(canvas, kRed) == 6);
  canvas.set_clip({5, 0, 7, 8});
  canvas.fill_rect({0, 7, 10, 8}, kBlack);  // clipped: only x 5 and 6
  CHECK(count_color(canvas, kBlack) == 2);
  CHECK(canvas.pixel(5, 7) == kBlack);
  CHECK_THROWS_AS(Canvas(0, 5, kWhite), std::invalid_argument);
}

TEST_CASE("raster: a 2 px line has exact color along it and a soft edge") {
  Canvas canvas(40, 40, kWhite);
  canvas.draw_line(5, 20, 35, 20, kRed, 2.0);
  for (int x = 5; x <= 35; ++x) {
    CHECK(canvas.pixel(x, 20) == kRed);    // on the line
    CHECK(canvas.pixel(x, 21) != kWhite);  // within the width
    CHECK(canvas.pixel(x, 23) == kWhite);  // beyond it
  }
  Canvas diagonal(40, 40, kWhite);
  diagonal.draw_line(0, 0, 39, 39, kRed, 2.0);
  for (int i = 0; i < 40; ++i) CHECK(diagonal.pixel(i, i) == kRed);
  CHECK(diagonal.pixel(0, 39) == kWhite);

  Canvas hard(20, 20, kWhite);  // without anti-aliasing, only exact color or untouched
  hard.draw_line(2, 3, 17, 11, kRed, 2.0, false);
  CHECK(count_color(hard, kRed) + count_color(hard, kWhite) == 400);
  CHECK(count_color(hard, kRed) > 16);
}

TEST_CASE("raster: a zero-length line is a dot, non-finite ends draw nothing") {
  Canvas canvas(20, 20, kWhite);
  canvas.draw_line(10, 10, 10, 10, kRed, 6.0);
  CHECK(canvas.pixel(10, 10) == kRed);
  CHECK(canvas.pixel(12, 11) == kRed);  // 2.24 from the center: within (6 - 1) / 2
  CHECK(canvas.pixel(12, 12) != kRed);  // 2.83: the soft edge
  CHECK(canvas.pixel(12, 12) != kWhite);
  CHECK(canvas.pixel(10, 15) == kWhite);
  Canvas untouched(20, 20, kWhite);
  untouched.draw_line(0, 0, std::numeric_limits<double>::infinity(), 5, kRed, 2.0);
  CHECK(count_color(untouched, kWhite) == 400);
  untouched.draw_line(-1e6, 3, 1e6, 3, kRed, 2.0);  // far-away ends: only the clip is visited
  CHECK(count_color(untouched, kRed) == 20);        // row 3; rows 2 and 4 get half coverage
  CHECK(count_color(untouched, kWhite) == 400 - 20 * 3);
}

TEST_CASE("font: every printable character has ink but space, others show as '?'") {
  for (int c = 33; c <= 126; ++c) {
    const uint8_t* rows = glyph_rows(static_cast<char>(c));
    int ink = 0;
    for (int r = 0; r < kGlyphRows; ++r) {
      CHECK((rows[r] & ~0x1F) == 0);  // 5 columns only
      ink += rows[r] != 0;
    }
    CHECK_MESSAGE(ink > 0, "no ink for '" << static_cast<char>(c) << "'");
  }
  for (int r = 0; r < kGlyphRows; ++r) CHECK(glyph_rows(' ')[r] == 0);
  CHECK(glyph_rows('\n') == glyph_rows('?'));
  CHECK(glyph_rows(static_cast<char>(0xC3)) == glyph_rows('?'));
  CHECK(text_width("", 1) == 0);
  CHECK(text_width("ab", 1) == 11);
  CHECK(text_width("ab", 2) == 22);
}

TEST_CASE("font: text stays inside its box, horizontal and rotated") {
  const std::string text = "Ag|y";  // a capital, a descender, a full-height bar
  for (const TextDirection direction : {TextDirection::right, TextDirection::up}) {
    Canvas canvas(60, 60, kWhite);
    draw_text(canvas, 10, 20, text, kBlack, 2, direction);
    const bool up = direction == TextDirection::up;
    const int w = up ? text_height(2) : text_width(text, 2), h = up ? text_width(text, 2) : text_height(2);
    int inside = 0, outside = 0;
    for (int y = 0; y < 60; ++y) {
      for (int x = 0; x < 60; ++x) {
        if (canvas.pixel(x, y) != kBlack) continue;
        (x >= 10 && x < 10 + w && y >= 20 && y < 20 + h ? inside : outside)++;
      }
    }
    CHECK(inside > 0);
    CHECK(outside == 0);
  }
  // Rotated text reads bottom to top: the first character ('A', no descender) is at the bottom.
  Canvas canvas(20, 20, kWhite);
  draw_text(canvas, 0, 0, "A.", kBlack, 1, TextDirection::up);
  CHECK(canvas.pixel(0, 8) == kBlack);  // the apex of 'A' (row 0, column 2) is in the leftmost column
  for (int y = 0; y < 5; ++y) CHECK(canvas.pixel(0, y) == kWhite);  // '.' has no ink in row 0
}
