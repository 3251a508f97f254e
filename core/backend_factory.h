// Chooses and creates the backend a context runs on.
#pragma once

#include <memory>

#include "kernels/backend.h"
#include "logger.h"

namespace fp8rl {

enum class BackendChoice : int32_t { automatic = 0, cpu = 1, cuda = 2 };

struct BackendRequest {
  BackendChoice choice = BackendChoice::automatic;
  int num_threads = 0;  // <= 0: one per hardware thread
  int cuda_device = 0;
};

// Throws Error(backend_unavailable) when CUDA is asked for and not usable.
std::unique_ptr<Backend> create_backend(const BackendRequest& request, const Logger& logger);

bool cuda_backend_compiled() noexcept;

}  // namespace fp8rl
