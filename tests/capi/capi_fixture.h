// A CPU context for C API tests, destroyed at scope exit.
#pragma once

#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>

class CpuContext {
 public:
  explicit CpuContext(int32_t threads = 2) {
    fp8rl_context_options options;
    REQUIRE(fp8rl_context_options_init(&options) == FP8RL_OK);
    options.backend = FP8RL_BACKEND_CPU;
    options.num_threads = threads;
    REQUIRE_MESSAGE(fp8rl_context_create(&options, &context_) == FP8RL_OK, fp8rl_last_error_message());
  }
  ~CpuContext() { fp8rl_context_destroy(context_); }
  CpuContext(const CpuContext&) = delete;
  CpuContext& operator=(const CpuContext&) = delete;

  fp8rl_context* get() const { return context_; }

 private:
  fp8rl_context* context_ = nullptr;
};
