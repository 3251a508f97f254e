// What the opaque handles of the C API hold.
#pragma once

#include "core/context.h"

struct fp8rl_context {
  fp8rl::Context impl;
};

namespace fp8rl::capi {

inline Context& context_of(fp8rl_context* handle) {
  require(handle != nullptr, "context is NULL");
  return handle->impl;
}

inline const Context& context_of(const fp8rl_context* handle) {
  require(handle != nullptr, "context is NULL");
  return handle->impl;
}

}  // namespace fp8rl::capi
