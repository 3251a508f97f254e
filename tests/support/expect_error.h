// Asserts that body throws fp8rl::Error with `status` and a message holding
// every fragment (the tests of corrupt files name the file and the item).
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/error.h"

namespace fp8rl::test {

inline void expect_error(const std::function<void()>& body, Status status, const std::vector<std::string>& fragments) {
  try {
    body();
    FAIL("no error thrown");
  } catch (const Error& error) {
    const std::string message = error.what();
    CAPTURE(message);
    CHECK(static_cast<int>(error.status()) == static_cast<int>(status));
    for (const std::string& fragment : fragments) {
      CAPTURE(fragment);
      CHECK(message.find(fragment) != std::string::npos);
    }
  }
}

}  // namespace fp8rl::test
