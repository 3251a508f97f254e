// Factory for the CUDA backend (sm_90). Declared for every build; defined only
// when FP8RL_WITH_CUDA is on (core/backend_factory.cpp checks FP8RL_HAVE_CUDA).
#pragma once

#include <memory>

#include "../backend.h"

namespace fp8rl {

// Number of usable CUDA devices; 0 when there is no driver or no device. Never throws.
int cuda_device_count() noexcept;

// Throws Error(backend_unavailable) when the device does not exist.
std::unique_ptr<Backend> make_cuda_backend(int device);

}  // namespace fp8rl
