// The tokenizer of a build without PCRE2: every entry point says why it is unavailable.
#include "core/text/tokenizer.h"
#include "kernels/error.h"

namespace fp8rl::text {

bool tokenizer_available() { return false; }

struct Tokenizer::Impl {};

namespace {
[[noreturn]] void unavailable() {
  fail(Status::unsupported, "tokenizer: this library was built without PCRE2 (libpcre2-8), which the tokenizer needs");
}
}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;
Tokenizer Tokenizer::load(const std::string&) { unavailable(); }
Tokenizer Tokenizer::from_json(std::string_view, const std::string&) { unavailable(); }
std::vector<int32_t> Tokenizer::encode(std::string_view, bool) const { unavailable(); }
std::string Tokenizer::decode(const int32_t*, size_t, bool) const { unavailable(); }
int32_t Tokenizer::token_to_id(std::string_view) const { unavailable(); }
std::optional<std::string_view> Tokenizer::id_to_token(int32_t) const { unavailable(); }
size_t Tokenizer::vocab_size() const { unavailable(); }
const SpecialTokenIds& Tokenizer::special_ids() const { unavailable(); }

}  // namespace fp8rl::text
