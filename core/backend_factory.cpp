#include "backend_factory.h"

#include "kernels/cpu/cpu_backend.h"
#if FP8RL_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace fp8rl {
namespace {

int usable_cuda_devices() noexcept {
#if FP8RL_HAVE_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

std::unique_ptr<Backend> create_cuda_backend(int device) {
#if FP8RL_HAVE_CUDA
  return make_cuda_backend(device);
#else
  (void)device;
  fail(Status::backend_unavailable, "the CUDA backend was asked for, but this build of fp8rl has no CUDA support");
#endif
}

}  // namespace

bool cuda_backend_compiled() noexcept { return FP8RL_HAVE_CUDA != 0; }

std::unique_ptr<Backend> create_backend(const BackendRequest& request, const Logger& logger) {
  switch (request.choice) {
    case BackendChoice::cpu: return make_cpu_backend(request.num_threads);
    case BackendChoice::cuda: {
      const int devices = usable_cuda_devices();
      if (request.cuda_device < 0 || request.cuda_device >= devices)
        fail(Status::backend_unavailable, "CUDA device " + std::to_string(request.cuda_device) +
                                              " was asked for, but " + std::to_string(devices) +
                                              " usable CUDA device(s) were found");
      return create_cuda_backend(request.cuda_device);
    }
    case BackendChoice::automatic: break;
  }
  if (usable_cuda_devices() > request.cuda_device && request.cuda_device >= 0)
    return create_cuda_backend(request.cuda_device);
  logger.log(LogLevel::info, "backend auto: no usable CUDA device, using the CPU backend");
  return make_cpu_backend(request.num_threads);
}

}  // namespace fp8rl
