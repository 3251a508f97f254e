#include "api_guard.h"

#include <new>
#include <stdexcept>

namespace fp8rl::capi {
namespace {

thread_local std::string last_error_message;

}  // namespace

void set_last_error(const char* function, const char* message) noexcept {
  try {
    last_error_message = std::string(function) + ": " + message;
  } catch (...) {
    last_error_message.clear();  // out of memory while reporting: keep the status, drop the text
  }
}

void set_last_error_text(const char* message) noexcept {
  try {
    last_error_message = message;
  } catch (...) {
    last_error_message.clear();
  }
}

const char* last_error() noexcept { return last_error_message.c_str(); }

fp8rl_status status_from_current_exception(const char* function) noexcept {
  try {
    throw;
  } catch (const Error& error) {
    set_last_error(function, error.what());
    return static_cast<fp8rl_status>(error.status());
  } catch (const std::bad_alloc&) {
    set_last_error(function, "out of host memory");
    return FP8RL_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& error) {
    set_last_error(function, (std::string("internal error: ") + error.what()).c_str());
    return FP8RL_ERROR_INTERNAL;
  } catch (...) {
    set_last_error(function, "internal error: unknown exception");
    return FP8RL_ERROR_INTERNAL;
  }
}

}  // namespace fp8rl::capi

extern "C" FP8RL_API const char* fp8rl_last_error_message(void) { return fp8rl::capi::last_error(); }
