// The ABI boundary: every public function runs its body through guarded(),
// which turns C++ exceptions into an fp8rl_status and a per-thread message.
#pragma once

#include <cstring>
#include <string>

#include "fp8rl/fp8rl.h"
#include "kernels/error.h"

namespace fp8rl::capi {

void set_last_error(const char* function, const char* message) noexcept;
const char* last_error() noexcept;

fp8rl_status status_from_current_exception(const char* function) noexcept;

template <class Body>
fp8rl_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return FP8RL_OK;
  } catch (...) {
    return status_from_current_exception(function);
  }
}

// Copies a caller's options struct, honouring struct_size: a smaller struct
// from an older header keeps the defaults for the fields it lacks.
template <class Options>
Options read_options(const Options* given, const Options& defaults, const char* name) {
  require(given != nullptr, std::string(name) + " is NULL");
  const uint32_t size = given->struct_size;
  if (size <= sizeof(uint32_t) || size > sizeof(Options))
    fail(Status::version_mismatch, std::string(name) + "->struct_size is " + std::to_string(size) +
                                       "; this library expects at most " + std::to_string(sizeof(Options)) +
                                       " (call the _init function first, and check header and library versions)");
  Options result = defaults;
  std::memcpy(static_cast<void*>(&result), given, size);
  result.struct_size = sizeof(Options);
  return result;
}

}  // namespace fp8rl::capi
