// NCCL communicators: the C arguments are checked here, in every build; the
// communicator is core/dist/nccl_communicator.h, which in a build without the
// CUDA backend answers FP8RL_ERROR_UNSUPPORTED.
#include <cmath>
#include <cstring>
#include <string>

#include "api_guard.h"
#include "core/dist/nccl_communicator.h"
#include "handles.h"

using fp8rl::capi::guarded;

extern "C" {

FP8RL_API fp8rl_status fp8rl_nccl_unique_id(uint8_t* out_id) {
  return guarded(__func__, [&] {
    fp8rl::require(out_id != nullptr, "out_id is NULL");
    const fp8rl::dist::NcclId id = fp8rl::dist::nccl_unique_id();
    std::memcpy(out_id, id.data(), id.size());
  });
}

FP8RL_API fp8rl_status fp8rl_communicator_create_nccl(const uint8_t* id, int32_t rank, int32_t world_size,
                                                      int32_t cuda_device, double timeout_seconds,
                                                      fp8rl_communicator** out_communicator) {
  return guarded(__func__, [&] {
    using fp8rl::require;
    require(id != nullptr, "id is NULL");
    require(out_communicator != nullptr, "out_communicator is NULL");
    require(world_size >= 1, "world_size is " + std::to_string(world_size) + "; expected >= 1");
    require(rank >= 0 && rank < world_size, "rank is " + std::to_string(rank) + "; expected 0 to world_size - 1 = " +
                                                std::to_string(world_size - 1));
    require(cuda_device >= 0, "cuda_device is " + std::to_string(cuda_device) + "; expected >= 0");
    require(std::isfinite(timeout_seconds) && timeout_seconds > 0.0,
            "timeout_seconds is " + std::to_string(timeout_seconds) + "; expected a finite number > 0");
    fp8rl::dist::NcclSetup setup;
    std::memcpy(setup.id.data(), id, setup.id.size());
    setup.rank = rank;
    setup.world_size = world_size;
    setup.cuda_device = cuda_device;
    setup.timeout_seconds = timeout_seconds;
    *out_communicator = new fp8rl_communicator{fp8rl::dist::make_nccl_communicator(setup)};
  });
}

}  // extern "C"
