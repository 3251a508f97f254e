// Communicators: the host-callback kind and the handle's lifetime. The NCCL
// kind is in nccl_api.cpp, the MPI kind in the companion libfp8rl_mpi.
#include <memory>

#include "api_guard.h"
#include "callback_communicator.h"
#include "handles.h"

using fp8rl::capi::guarded;

namespace {

fp8rl_collective_callbacks no_callbacks() {
  fp8rl_collective_callbacks callbacks{};
  callbacks.struct_size = sizeof(callbacks);
  callbacks.world_size = 1;
  return callbacks;
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_communicator_create_from_callbacks(const fp8rl_collective_callbacks* callbacks,
                                                                fp8rl_communicator** out_communicator) {
  return guarded(__func__, [&] {
    fp8rl::require(out_communicator != nullptr, "out_communicator is NULL");
    const auto resolved = fp8rl::capi::read_options(callbacks, no_callbacks(), "callbacks");
    // The handle first: once the communicator exists, its destroy callback
    // runs when it goes, and a failure must leave user_data to the caller.
    auto handle = std::make_unique<fp8rl_communicator>();
    handle->impl = fp8rl::capi::make_callback_communicator(resolved);
    *out_communicator = handle.release();
  });
}

FP8RL_API fp8rl_status fp8rl_communicator_destroy(fp8rl_communicator* communicator) {
  return guarded(__func__, [&] { delete communicator; });
}

FP8RL_API fp8rl_status fp8rl_communicator_get_rank(const fp8rl_communicator* communicator, int32_t* out_rank,
                                                   int32_t* out_world_size) {
  return guarded(__func__, [&] {
    fp8rl::require(communicator != nullptr, "communicator is NULL");
    if (out_rank != nullptr) *out_rank = communicator->impl->rank();
    if (out_world_size != nullptr) *out_world_size = communicator->impl->size();
  });
}

FP8RL_API fp8rl_status fp8rl_report_error(fp8rl_status status, const char* message) {
  if (status == FP8RL_OK) return FP8RL_OK;
  fp8rl::capi::set_last_error_text(message != nullptr ? message : "");
  return status;
}

}  // extern "C"
