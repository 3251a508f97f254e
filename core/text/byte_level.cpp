#include "core/text/byte_level.h"

#include "core/io/utf8.h"

namespace fp8rl::text {
namespace {

struct Tables {
  std::array<uint32_t, 256> to_code_point{};
  std::array<int16_t, 324> to_byte{};  // every code point of the alphabet is below 256 + 68
  Tables() {
    to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE);
      to_code_point[byte] = printable ? byte : next++;
      to_byte[to_code_point[byte]] = static_cast<int16_t>(byte);
    }
  }
};

const Tables& tables() {
  static const Tables instance;
  return instance;
}

}  // namespace

const std::array<uint32_t, 256>& byte_level_alphabet() { return tables().to_code_point; }

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char byte : bytes) io::append_utf8(out, tables().to_code_point[static_cast<uint8_t>(byte)]);
  return out;
}

bool byte_level_decode(std::string_view token, std::string& out) {
  const size_t start = out.size();
  for (size_t pos = 0; pos < token.size();) {
    const auto lead = static_cast<uint8_t>(token[pos]);
    uint32_t code_point = 0;
    if (lead < 0x80) {
      code_point = lead;
      pos += 1;
    } else if (lead >= 0xC2 && lead <= 0xC5 && pos + 1 < token.size()) {  // the alphabet ends at U+0143
      code_point = ((lead & 0x1Fu) << 6) | (static_cast<uint8_t>(token[pos + 1]) & 0x3Fu);
      if ((static_cast<uint8_t>(token[pos + 1]) & 0xC0) != 0x80) code_point = 0xFFFF;
      pos += 2;
    } else {
      code_point = 0xFFFF;
    }
    const int16_t byte = code_point < tables().to_byte.size() ? tables().to_byte[code_point] : -1;
    if (byte < 0) {
      out.resize(start);
      return false;
    }
    out.push_back(static_cast<char>(byte));
  }
  return true;
}

}  // namespace fp8rl::text
