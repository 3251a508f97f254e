// A build without PCRE2: the tokenizer says so instead of misbehaving.
#include <doctest/doctest.h>

#include <string>

#include "core/text/tokenizer.h"
#include "kernels/error.h"

TEST_CASE("without PCRE2 the tokenizer reports that it was built without it") {
  CHECK_FALSE(fp8rl::text::tokenizer_available());
  try {
    (void)fp8rl::text::Tokenizer::load("any");
    FAIL("expected unsupported");
  } catch (const fp8rl::Error& error) {
    CHECK(error.status() == fp8rl::Status::unsupported);
    CHECK(std::string(error.what()).find("PCRE2") != std::string::npos);
  }
}
