#include "context.h"

#include <thread>

namespace fp8rl {

int resolve_thread_count(int requested) {
  if (requested > 0) return requested;
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

Context::Context(const BackendRequest& request, const Logger& logger)
    : logger_(logger), num_threads_(resolve_thread_count(request.num_threads)) {
  BackendRequest resolved = request;
  resolved.num_threads = num_threads_;
  backend_ = create_backend(resolved, logger_);
  description_ = backend_->description();
  logger_.log(LogLevel::info, "fp8rl context created on " + description_);
}

}  // namespace fp8rl
