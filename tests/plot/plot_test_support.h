// Helpers shared by the tests/plot suites: decoding a PNG with the
// independent oracle (tests/plot/png_oracle.py) and looking for colors.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tests/io/io_test_support.h"
#include "tools/plot/raster.h"

#ifndef FP8RL_PLOT_ORACLE_SCRIPT
#error "FP8RL_PLOT_ORACLE_SCRIPT must name tests/plot/png_oracle.py"
#endif

namespace fp8rl::test {

struct DecodedImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major R G B

  tools::Rgb at(int x, int y) const {
    const size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

// Decodes png_path with the oracle ($FP8RL_PYTHON, python3 when unset); fails
// the test when the oracle rejects the file.
inline DecodedImage decode_with_oracle(const std::string& png_path) {
  const char* python = std::getenv("FP8RL_PYTHON");
  const std::string ppm_path = png_path + ".ppm";
  const std::string command = std::string(python && *python ? python : "python3") + " '" + FP8RL_PLOT_ORACLE_SCRIPT +
                              "' '" + png_path + "' '" + ppm_path + "'";
  REQUIRE_MESSAGE(std::system(command.c_str()) == 0, "the oracle rejected " << png_path);

  std::ifstream in(ppm_path, std::ios::binary);
  std::string magic;
  int max_value = 0;
  DecodedImage image;
  in >> magic >> image.width >> image.height >> max_value;
  in.get();  // the single whitespace byte before the pixels
  REQUIRE((magic == "P6" && max_value == 255 && image.width > 0 && image.height > 0));
  image.rgb.resize(static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3);
  in.read(reinterpret_cast<char*>(image.rgb.data()), static_cast<std::streamsize>(image.rgb.size()));
  REQUIRE(in.gcount() == static_cast<std::streamsize>(image.rgb.size()));
  return image;
}

struct PixelPos {
  int x, y;
};

// Every pixel of exactly color inside [x0, x1) x [y0, y1).
inline std::vector<PixelPos> pixels_of(const DecodedImage& image, tools::Rgb color, tools::Rect region) {
  std::vector<PixelPos> found;
  for (int y = std::max(region.y0, 0); y < std::min(region.y1, image.height); ++y) {
    for (int x = std::max(region.x0, 0); x < std::min(region.x1, image.width); ++x) {
      if (image.at(x, y) == color) found.push_back({x, y});
    }
  }
  return found;
}

}  // namespace fp8rl::test
