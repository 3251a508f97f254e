// Unicode normalization of the text between added tokens (tokenizers'
// NFC normalizer, which Qwen2 uses), through utf8proc.
#pragma once

#include <string>
#include <string_view>

namespace fp8rl::text {

// NFC of `text` (valid UTF-8). Throws unsupported when the library was built
// without utf8proc.
std::string nfc(std::string_view text);

// Whether nfc() works in this build.
bool nfc_available();

}  // namespace fp8rl::text
