// The counterpart of read_options() for structs the library fills: the
// caller's struct_size says how much of the struct it has, so a struct from an
// older header receives only the fields it knows.
#pragma once

#include <cstring>
#include <string>

#include "kernels/error.h"

namespace fp8rl::capi {

template <class Struct>
void write_struct(Struct* out, const Struct& value, const char* name) {
  require(out != nullptr, std::string(name) + " is NULL");
  const uint32_t size = out->struct_size;
  if (size <= sizeof(uint32_t) || size > sizeof(Struct))
    fail(Status::version_mismatch, std::string(name) + "->struct_size is " + std::to_string(size) +
                                       "; this library expects at most " + std::to_string(sizeof(Struct)) +
                                       " (call the _init function first, and check header and library versions)");
  Struct copy = value;
  copy.struct_size = size;
  std::memcpy(static_cast<void*>(out), &copy, size);
}

}  // namespace fp8rl::capi
