// A context: one backend plus the host's logging, shared by everything a
// session of the library does. Calls on one context are serialized by its
// mutex, so hosts may share a context between threads.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "backend_factory.h"
#include "core/dist/communicator.h"
#include "logger.h"

namespace fp8rl {

class Context {
 public:
  // communicator null: a single process.
  Context(const BackendRequest& request, const Logger& logger,
          std::shared_ptr<dist::Communicator> communicator = nullptr);
  // Runs on a backend the caller built (tests use this to stand in for a device).
  Context(std::unique_ptr<Backend> backend, const Logger& logger, int num_threads,
          std::shared_ptr<dist::Communicator> communicator = nullptr);

  Backend& backend() { return *backend_; }
  const Logger& logger() const { return logger_; }
  std::mutex& mutex() { return mutex_; }
  BackendKind backend_kind() const { return backend_->kind(); }
  int num_threads() const { return num_threads_; }
  const std::string& description() const { return description_; }
  // The ranks this context trains with (a single process when none was given).
  const std::shared_ptr<dist::Communicator>& communicator() const { return communicator_; }
  int rank() const { return communicator_->rank(); }
  int world_size() const { return communicator_->size(); }

 private:
  Logger logger_;
  int num_threads_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<dist::Communicator> communicator_;
  std::string description_;
  std::mutex mutex_;
};

int resolve_thread_count(int requested);

}  // namespace fp8rl
