// The ABI boundary: every public function runs its body through guarded(),
// which turns C++ exceptions into an fp8rl_status and a per-thread message.
#pragma once

#include <cstring>
#include <string>

#include "fp8rl/fp8rl.h"
#include "kernels/error.h"

namespace fp8rl::capi {

void set_last_error(const char* function, const char* message) noexcept;
// The message as given, without a function name (fp8rl_report_error).
void set_last_error_text(const char* message) noexcept;
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

namespace detail {

// The struct_size rule: the first struct_size bytes of `given` over the
// defaults, so a smaller struct from an older header keeps the defaults for
// the fields it lacks. `size_field` names given's struct_size in messages.
template <class Options>
Options merge_known_fields(const Options* given, const Options& defaults, const std::string& size_field) {
  const uint32_t size = given->struct_size;
  if (size <= sizeof(uint32_t) || size > sizeof(Options))
    fail(Status::version_mismatch, size_field + " is " + std::to_string(size) + "; this library expects at most " +
                                       std::to_string(sizeof(Options)) +
                                       " (call the _init function first, and check header and library versions)");
  Options result = defaults;
  std::memcpy(static_cast<void*>(&result), given, size);
  result.struct_size = sizeof(Options);
  return result;
}

}  // namespace detail

// A path argument: neither NULL nor empty (an empty path would reach the
// file system as "no such file" or "invalid argument", naming nothing).
inline void require_path(const char* path, const char* name) {
  require(path != nullptr, std::string(name) + " is NULL");
  require(*path != '\0', std::string(name) + " is an empty string");
}

// Copies a caller's options struct, honouring struct_size: a smaller struct
// from an older header keeps the defaults for the fields it lacks.
template <class Options>
Options read_options(const Options* given, const Options& defaults, const char* name) {
  require(given != nullptr, std::string(name) + " is NULL");
  return detail::merge_known_fields(given, defaults, std::string(name) + "->struct_size");
}

// An options struct embedded in another (fp8rl_trainer_options::importance),
// taken from the outer struct after read_options() read that: by the same
// rule, on its own struct_size. Where the caller's outer struct ends before
// it, read_options() left it the defaults, struct_size included.
template <class Options>
Options read_embedded_options(const Options& embedded, const Options& defaults, const std::string& name) {
  return detail::merge_known_fields(&embedded, defaults, name + ".struct_size");
}

}  // namespace fp8rl::capi
