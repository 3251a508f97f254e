#include "handles.h"

#include <cstdio>

#include "world.h"

namespace fp8rl_cli {

void log_to_stderr(fp8rl_log_level level, const char* message, void* /*user_data*/) {
  std::fprintf(stderr, "fp8rl: %s: %s\n", level >= FP8RL_LOG_ERROR ? "error" : "warning", message);
}

Context::Context(int threads) {
  fp8rl_context_options options;
  check(fp8rl_context_options_init(&options), "fp8rl_context_options_init");
  options.backend = FP8RL_BACKEND_AUTO;
  options.num_threads = threads;
  options.log_level = FP8RL_LOG_WARNING;
  options.log_callback = log_to_stderr;
  options.communicator = world().communicator();
  check(fp8rl_context_create(&options, &handle_), "fp8rl_context_create");
}

}  // namespace fp8rl_cli
