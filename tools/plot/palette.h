// The colors of a chart. Series i is drawn in series_color(i) in every chart
// of a figure, so one legend reading holds across the charts side by side.
#pragma once

#include <cstddef>

#include "tools/plot/raster.h"

namespace fp8rl::tools {

// Eight hues that stay distinct on white; none is gray, so no series is
// mistaken for a grid line or an axis.
constexpr Rgb kSeriesPalette[8] = {
    {31, 119, 180},   // blue
    {255, 127, 14},   // orange
    {44, 160, 44},    // green
    {214, 39, 40},    // red
    {148, 103, 189},  // purple
    {140, 86, 75},    // brown
    {227, 119, 194},  // pink
    {23, 190, 207},   // cyan
};
// Series 8 and up repeat the palette.
inline Rgb series_color(size_t index) { return kSeriesPalette[index % 8]; }

constexpr Rgb kGridColor{228, 228, 228};
constexpr Rgb kAxisColor{0, 0, 0};
constexpr Rgb kTextColor{0, 0, 0};

}  // namespace fp8rl::tools
