// Owning wrappers of the C API's handles: created on construction, destroyed
// in reverse order of declaration, so a policy never outlives its context and
// a trainer never outlives its policy.
#ifndef FP8RL_TOOLS_HANDLES_H
#define FP8RL_TOOLS_HANDLES_H

#include <fp8rl/fp8rl.h>

#include <string>
#include <utility>

#include "cli_error.h"

namespace fp8rl_cli {

// Library warnings reach the user on stderr; everything else stays quiet.
void log_to_stderr(fp8rl_log_level level, const char* message, void* user_data);

class Context {
 public:
  explicit Context(int threads);
  ~Context() { fp8rl_context_destroy(handle_); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  fp8rl_context* get() const { return handle_; }

 private:
  fp8rl_context* handle_ = nullptr;
};

class Policy {
 public:
  Policy() = default;
  explicit Policy(fp8rl_policy* handle) : handle_(handle) {}
  ~Policy() { fp8rl_policy_destroy(handle_); }
  Policy(Policy&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Policy& operator=(Policy&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  fp8rl_policy* get() const { return handle_; }

 private:
  fp8rl_policy* handle_ = nullptr;
};

class Trainer {
 public:
  Trainer(fp8rl_policy* policy, const fp8rl_trainer_options& options) {
    check(fp8rl_trainer_create(policy, &options, &handle_), "fp8rl_trainer_create");
  }
  ~Trainer() { fp8rl_trainer_destroy(handle_); }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;
  fp8rl_trainer* get() const { return handle_; }

 private:
  fp8rl_trainer* handle_ = nullptr;
};

class Rollout {
 public:
  Rollout() = default;
  ~Rollout() { fp8rl_rollout_destroy(handle_); }
  Rollout(const Rollout&) = delete;
  Rollout& operator=(const Rollout&) = delete;
  fp8rl_rollout** out() { return &handle_; }
  const fp8rl_rollout* get() const { return handle_; }

 private:
  fp8rl_rollout* handle_ = nullptr;
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_HANDLES_H
