// The PNG encoder against known checksum vectors and an independent decoder
// (tests/plot/png_oracle.py: zlib + struct + binascii.crc32).
#include "tools/plot/png_writer.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "tests/plot/plot_test_support.h"
#include "tools/plot/atomic_file.h"

namespace {

using namespace fp8rl::tools;
using fp8rl::test::TempDir;

const uint8_t* bytes_of(const char* text) { return reinterpret_cast<const uint8_t*>(text); }

// Adler-32 straight from its definition (RFC 1950), reducing after every byte.
uint32_t adler32_by_definition(const std::vector<uint8_t>& data) {
  uint32_t a = 1, b = 0;
  for (uint8_t byte : data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

}  // namespace

TEST_CASE("png: CRC-32 known vectors") {
  CHECK(crc32(bytes_of("123456789"), 9) == 0xCBF43926u);
  CHECK(crc32(bytes_of(""), 0) == 0u);
  const char* fox = "The quick brown fox jumps over the lazy dog";
  CHECK(crc32(bytes_of(fox), std::strlen(fox)) == 0x414FA339u);
  // Continuing over a split gives the same as one pass.
  CHECK(crc32(bytes_of("56789"), 5, crc32(bytes_of("1234"), 4)) == 0xCBF43926u);
}

TEST_CASE("png: Adler-32 known vectors and long inputs") {
  CHECK(adler32(bytes_of("Wikipedia"), 9) == 0x11E60398u);
  CHECK(adler32(bytes_of(""), 0) == 1u);
  // Long runs of 0xFF stress the deferred modulo (it must happen before 32-bit overflow).
  const std::vector<uint8_t> ones(100000, 0xFF);
  CHECK(adler32(ones.data(), ones.size()) == adler32_by_definition(ones));
  CHECK(adler32(ones.data() + 777, ones.size() - 777, adler32(ones.data(), 777)) == adler32_by_definition(ones));
}

TEST_CASE("png: the oracle decodes exactly what was encoded") {
  TempDir dir;
  SUBCASE("3x2, one block") {
    const std::vector<uint8_t> rgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 1, 2, 3, 254, 253, 252, 128, 64, 32};
    write_file_atomically(dir.file("small.png"), encode_png_rgb(3, 2, rgb.data()));
    const auto image = fp8rl::test::decode_with_oracle(dir.file("small.png"));
    CHECK(image.width == 3);
    CHECK(image.height == 2);
    CHECK(image.rgb == rgb);
  }
  SUBCASE("300x100 (90,100 raw bytes): two stored blocks") {
    std::vector<uint8_t> rgb(300 * 100 * 3);
    uint32_t state = 12345;
    for (uint8_t& v : rgb) v = static_cast<uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
    write_file_atomically(dir.file("large.png"), encode_png_rgb(300, 100, rgb.data()));
    const auto image = fp8rl::test::decode_with_oracle(dir.file("large.png"));
    CHECK(image.width == 300);
    CHECK(image.height == 100);
    CHECK(image.rgb == rgb);
  }
}

TEST_CASE("png: bad sizes throw") {
  const uint8_t pixel[3] = {0, 0, 0};
  CHECK_THROWS_AS(encode_png_rgb(0, 1, pixel), std::invalid_argument);
  CHECK_THROWS_AS(encode_png_rgb(1, -1, pixel), std::invalid_argument);
  CHECK_THROWS_AS(encode_png_rgb(1, 1, nullptr), std::invalid_argument);
}

TEST_CASE("atomic file: replaces the old file and leaves no temporary behind") {
  TempDir dir;
  const std::string path = dir.file("out.bin");
  write_file_atomically(path, {1, 2, 3});
  write_file_atomically(path, {4, 5});
  CHECK(fp8rl::test::read_bytes(path) == std::vector<uint8_t>{4, 5});
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator{}) == 1);

  CHECK_THROWS_AS(write_file_atomically(dir.file("missing/out.bin"), {1}), std::runtime_error);
}
