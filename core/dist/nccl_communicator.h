// The NCCL communicator: collectives over GPU memory (BufferSpace::device),
// enqueued on the stream of the CUDA backend it is bound to, so they order
// with the backend's kernels without a host round trip.
//
// Failure model: the communicator is non-blocking (ncclConfig_t::blocking =
// 0). Joining the group and every collective are polled until done or until
// timeout_seconds have passed; on a timeout, an NCCL error or a CUDA error
// the communicator is aborted (ncclCommAbort, which also stops its kernels)
// and the call throws Error(Status::distributed, or cuda_error for a failed
// stream) naming the collective, the rank, the world size and the reason.
// From then on every call fails at once with that message: an NCCL group
// cannot be repaired, every rank must create a new one.
//
// Declared in every build; a build without the CUDA backend compiles
// nccl_unavailable.cpp instead of nccl_communicator.cpp (core/CMakeLists.txt),
// whose functions throw Error(unsupported).
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "core/dist/communicator.h"

namespace fp8rl::dist {

// An ncclUniqueId's bytes.
using NcclId = std::array<uint8_t, 128>;

struct NcclSetup {
  NcclId id{};
  int rank = 0;
  int world_size = 1;
  int cuda_device = 0;
  // Bounds joining the group and each collective from enqueue to completion
  // (the transfer included); > 0 and finite.
  double timeout_seconds = 600.0;
};

// A new id. The process that makes it runs NCCL's bootstrap root (a
// listening socket the other ranks connect to), so it must stay alive until
// every rank has joined. Throws Error(backend_unavailable) without
// libnccl.so.2.
NcclId nccl_unique_id();

// Joins the group: returns when all world_size ranks have called this with the
// same id. Throws Error(backend_unavailable) for a missing device or NCCL,
// Error(distributed) when the group does not form within timeout_seconds or
// NCCL fails. The arguments are validated by the caller (capi/src/nccl_api.cpp).
std::shared_ptr<Communicator> make_nccl_communicator(const NcclSetup& setup);

}  // namespace fp8rl::dist
