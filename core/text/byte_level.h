// The byte-level alphabet of GPT-2 (and every byte-level BPE since): each of
// the 256 byte values is written as one printable Unicode character, so a
// vocabulary of strings covers arbitrary bytes. Printable Latin-1 bytes stand
// for themselves; the other 68 take U+0100.. in byte order (space -> 'Ġ').
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace fp8rl::text {

// The code point that stands for each byte.
const std::array<uint32_t, 256>& byte_level_alphabet();

// bytes -> their byte-level spelling (UTF-8).
std::string byte_level_encode(std::string_view bytes);

// A byte-level spelling -> its bytes, appended to `out`. False, with `out`
// unchanged, when `token` holds a character outside the alphabet (or is not
// UTF-8): tokenizers' ByteLevel decoder then keeps the token's own text.
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace fp8rl::text
