#include "context.h"

#include <thread>

namespace fp8rl {

int resolve_thread_count(int requested) {
  if (requested > 0) return requested;
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? static_cast<int>(hardware) : 1;
}

namespace {

BackendRequest with_threads(BackendRequest request, int num_threads) {
  request.num_threads = num_threads;
  return request;
}

}  // namespace

Context::Context(const BackendRequest& request, const Logger& logger,
                 std::shared_ptr<dist::Communicator> communicator)
    : Context(create_backend(with_threads(request, resolve_thread_count(request.num_threads)), logger), logger,
              resolve_thread_count(request.num_threads), std::move(communicator)) {}

Context::Context(std::unique_ptr<Backend> backend, const Logger& logger, int num_threads,
                 std::shared_ptr<dist::Communicator> communicator)
    : logger_(logger),
      num_threads_(num_threads),
      backend_(std::move(backend)),
      communicator_(communicator ? std::move(communicator) : dist::make_single_process()) {
  require(backend_ != nullptr, "context: no backend");
  // Refused here, when the context is created, not at the first training step.
  dist::require_reachable(*communicator_, *backend_);
  communicator_->bind_backend(*backend_);
  description_ = backend_->description();
  if (communicator_->size() > 1) description_ += "; " + communicator_->description();
  logger_.log(LogLevel::info, "fp8rl context created on " + description_);
}

}  // namespace fp8rl
