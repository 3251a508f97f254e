// PNG = signature, then chunks [length u32 BE][type 4 bytes][data][CRC-32 of type + data, u32 BE].
// Chunks written: IHDR, one IDAT, IEND.
#include "tools/plot/png_writer.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace fp8rl::tools {
namespace {

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}

void put_u32_be(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

void put_chunk(std::vector<uint8_t>& out, const char type[4], const std::vector<uint8_t>& data) {
  put_u32_be(out, static_cast<uint32_t>(data.size()));
  const size_t type_start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put_u32_be(out, crc32(out.data() + type_start, out.size() - type_start));
}

// zlib stream (RFC 1950) of stored deflate blocks (RFC 1951 section 3.2.4).
std::vector<uint8_t> zlib_stored(const std::vector<uint8_t>& raw) {
  constexpr size_t kMaxBlock = 65535;       // LEN is 16 bits
  std::vector<uint8_t> out = {0x78, 0x01};  // CM 8 (deflate), 32K window; (0x78 * 256 + 0x01) % 31 == 0
  out.reserve(raw.size() + raw.size() / kMaxBlock * 5 + 16);
  size_t pos = 0;
  do {
    const size_t len = std::min(kMaxBlock, raw.size() - pos);
    const bool final = pos + len == raw.size();
    out.push_back(final ? 1 : 0);  // BFINAL, BTYPE 00; the rest of the byte is padding
    out.push_back(static_cast<uint8_t>(len));
    out.push_back(static_cast<uint8_t>(len >> 8));
    out.push_back(static_cast<uint8_t>(~len));
    out.push_back(static_cast<uint8_t>(~len >> 8));
    out.insert(out.end(), raw.begin() + static_cast<std::ptrdiff_t>(pos),
               raw.begin() + static_cast<std::ptrdiff_t>(pos + len));
    pos += len;
  } while (pos < raw.size());
  put_u32_be(out, adler32(raw.data(), raw.size()));
  return out;
}

}  // namespace

uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  uint32_t c = ~crc;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

uint32_t adler32(const uint8_t* data, size_t size, uint32_t adler) {
  constexpr uint32_t kMod = 65521;
  constexpr size_t kRun = 5552;  // the longest run whose sums cannot overflow 32 bits
  uint32_t a = adler & 0xFFFFu, b = adler >> 16;
  while (size > 0) {
    const size_t run = std::min(size, kRun);
    for (size_t i = 0; i < run; ++i) b += a += data[i];
    a %= kMod;
    b %= kMod;
    data += run;
    size -= run;
  }
  return (b << 16) | a;
}

std::vector<uint8_t> encode_png_rgb(int width, int height, const uint8_t* rgb) {
  constexpr int kMaxSide = 1 << 24;
  if (width < 1 || height < 1 || width > kMaxSide || height > kMaxSide || rgb == nullptr) {
    throw std::invalid_argument("encode_png_rgb: bad image " + std::to_string(width) + "x" + std::to_string(height));
  }
  std::vector<uint8_t> ihdr;
  put_u32_be(ihdr, static_cast<uint32_t>(width));
  put_u32_be(ihdr, static_cast<uint32_t>(height));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // bit depth 8, color type 2 (RGB), deflate, adaptive filters, no interlace

  const size_t row_bytes = static_cast<size_t>(width) * 3;
  std::vector<uint8_t> raw;  // each row: filter type byte, then the row
  raw.reserve((row_bytes + 1) * static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    const uint8_t* row = rgb + row_bytes * static_cast<size_t>(y);
    raw.insert(raw.end(), row, row + row_bytes);
  }

  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", zlib_stored(raw));
  put_chunk(png, "IEND", {});
  return png;
}

}  // namespace fp8rl::tools
