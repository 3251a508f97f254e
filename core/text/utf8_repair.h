// Invalid UTF-8, replaced the way Python's bytes.decode("utf-8", "replace")
// and Rust's String::from_utf8_lossy do it: each maximal subpart of an
// ill-formed sequence becomes one U+FFFD (Unicode's recommended practice).
#pragma once

#include <string>
#include <string_view>

namespace fp8rl::text {

// `bytes` with every ill-formed sequence replaced by U+FFFD; valid input comes back unchanged.
std::string utf8_replace_invalid(std::string_view bytes);

}  // namespace fp8rl::text
