#include "core/text/utf8_repair.h"

#include <cstdint>

#include "core/io/utf8.h"

namespace fp8rl::text {
namespace {

// Bytes of the longest prefix of a sequence starting at bytes[pos] that could
// still begin a well-formed character (at least 1): the "maximal subpart".
size_t maximal_subpart(std::string_view bytes, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[pos + i]); };
  const uint8_t lead = byte(0);
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 1;
  }
  size_t valid = 1;
  for (; valid < length && pos + valid < bytes.size(); ++valid) {
    const uint8_t next = byte(valid);
    const bool ok = valid == 1 ? next >= low && next <= high : next >= 0x80 && next <= 0xBF;
    if (!ok) break;
  }
  return valid;
}

}  // namespace

std::string utf8_replace_invalid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 8);
  for (size_t pos = 0; pos < bytes.size();) {
    const size_t length = io::utf8_sequence_length(bytes, pos);
    if (length != 0) {
      out.append(bytes.substr(pos, length));
      pos += length;
    } else {
      out.append("\xEF\xBF\xBD");
      pos += maximal_subpart(bytes, pos);
    }
  }
  return out;
}

}  // namespace fp8rl::text
