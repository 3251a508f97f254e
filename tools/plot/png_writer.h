// PNG encoding without a zlib dependency: an 8-bit RGB image becomes a PNG
// whose IDAT holds a zlib stream of *stored* (uncompressed) deflate blocks.
// A 640x420 chart is ~0.8 MB instead of ~30 KB; in exchange there is no
// compressor to get wrong, and any PNG reader can open the file.
//
// Usage:
//   std::vector<uint8_t> rgb(width * height * 3, 255);       // row-major, R G B
//   std::vector<uint8_t> png = encode_png_rgb(width, height, rgb.data());
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8rl::tools {

// CRC-32 (ISO 3309 / PNG: reflected polynomial 0xEDB88320). Pass the previous
// result as crc to continue over more data; start with 0.
uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0);

// Adler-32 (RFC 1950). Pass the previous result to continue; start with 1.
uint32_t adler32(const uint8_t* data, size_t size, uint32_t adler = 1);

// The whole PNG file for a width x height image (rgb: width * height * 3
// bytes, row-major, top row first). Rows use filter type 0 (None).
// Throws std::invalid_argument when width or height is not in [1, 2^24].
std::vector<uint8_t> encode_png_rgb(int width, int height, const uint8_t* rgb);

}  // namespace fp8rl::tools
