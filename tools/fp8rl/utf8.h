// UTF-8 encoding and validation, shared by the JSON reader (which decodes \u
// escapes) and the JSON writer (which must not pass on broken text).
#ifndef FP8RL_TOOLS_UTF8_H
#define FP8RL_TOOLS_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace fp8rl_cli {

// Appends the UTF-8 bytes of a code point (<= 0x10FFFF, not a surrogate).
void append_utf8(std::string& out, uint32_t code_point);

// The length (1 to 4) of the well-formed UTF-8 sequence starting at
// text[pos], or 0 when the bytes there are not one (overlong forms,
// surrogates, values past U+10FFFF and truncated sequences all count as bad).
size_t utf8_sequence_length(const std::string& text, size_t pos);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_UTF8_H
