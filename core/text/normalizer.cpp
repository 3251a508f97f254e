#include "core/text/normalizer.h"

#include <cstdlib>

#include "kernels/error.h"

#if FP8RL_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

namespace fp8rl::text {

#if FP8RL_HAVE_UTF8PROC
bool nfc_available() { return true; }

std::string nfc(std::string_view text) {
  if (text.empty()) return {};
  // ASCII is its own NFC.
  bool ascii = true;
  for (const char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (length < 0) fail(Status::invalid_argument, std::string("NFC normalization failed: ") + utf8proc_errmsg(length));
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(length));
  std::free(out);
  return result;
}
#else
bool nfc_available() { return false; }

std::string nfc(std::string_view) {
  fail(Status::unsupported, "tokenizer: NFC normalization needs utf8proc, and this library was built without it");
}
#endif

}  // namespace fp8rl::text
