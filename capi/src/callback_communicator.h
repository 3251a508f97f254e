// A communicator over a host's fp8rl_collective_callbacks (and over
// libfp8rl_mpi, which hands its MPI collectives in the same way).
#pragma once

#include <memory>

#include "core/dist/communicator.h"
#include "fp8rl/fp8rl.h"

namespace fp8rl::capi {

// Validates the struct (required callbacks, rank and world size) naming the
// field; the communicator calls destroy(user_data) when it is destroyed.
std::shared_ptr<dist::Communicator> make_callback_communicator(const fp8rl_collective_callbacks& callbacks);

}  // namespace fp8rl::capi
