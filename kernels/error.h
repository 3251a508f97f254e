// The one exception type of the library's internals. It never crosses the C
// ABI: capi/src turns it into an fp8rl_status and a per-thread message.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace fp8rl {

// Values equal the public fp8rl_status codes (capi/include/fp8rl/fp8rl.h).
enum class Status : int32_t {
  ok = 0,
  invalid_argument = 1,
  out_of_memory = 2,
  backend_unavailable = 3,
  non_finite = 4,
  io_error = 5,
  corrupt_data = 6,
  version_mismatch = 7,
  unsupported = 8,
  cuda_error = 9,
  internal = 10,
  distributed = 11,
};

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

[[noreturn]] inline void fail(Status status, const std::string& message) { throw Error(status, message); }

inline void require(bool condition, const std::string& message) {
  if (!condition) fail(Status::invalid_argument, message);
}

}  // namespace fp8rl
