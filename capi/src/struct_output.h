// The counterpart of read_options() for structs the library fills: the
// caller's struct_size (set by the struct's _init function, init_struct())
// says how much of the struct it has, so a struct from an older header
// receives only the fields it knows.
#pragma once

#include <cstring>
#include <string>

#include "kernels/error.h"

namespace fp8rl::capi {

// Refuses an out struct the library could not fill (NULL, or a struct_size
// it does not know), writing nothing: a call that changes state checks its
// outputs this way before it changes anything.
template <class Struct>
void check_out_struct(const Struct* out, const char* name) {
  require(out != nullptr, std::string(name) + " is NULL");
  const uint32_t size = out->struct_size;
  if (size <= sizeof(uint32_t) || size > sizeof(Struct))
    fail(Status::version_mismatch, std::string(name) + "->struct_size is " + std::to_string(size) +
                                       "; this library expects at most " + std::to_string(sizeof(Struct)) +
                                       " (call the _init function first, and check header and library versions)");
}

template <class Struct>
void write_struct(Struct* out, const Struct& value, const char* name) {
  check_out_struct(out, name);
  const uint32_t size = out->struct_size;
  Struct copy = value;
  copy.struct_size = size;
  std::memcpy(static_cast<void*>(out), &copy, size);
}

// The _init function of a struct the library fills: struct_size, and zero
// bytes everywhere else (padding included, so callers may compare bytes).
template <class Struct>
void init_struct(Struct* out, const char* name) {
  require(out != nullptr, std::string(name) + " is NULL");
  std::memset(static_cast<void*>(out), 0, sizeof(Struct));
  out->struct_size = sizeof(Struct);
}

}  // namespace fp8rl::capi
