// The collectives of libfp8rl_mpi's communicator: fp8rl_collective_callbacks
// over the library's own duplicate of the host's MPI communicator. Every
// collective is in place over host memory, with the layout fp8rl.h gives
// ::fp8rl_collective_callbacks (rank r's part after those of ranks 0..r-1).
#pragma once

#include <mpi.h>

#include <climits>
#include <cstdint>

#include "fp8rl/fp8rl.h"

namespace fp8rl::mpi {

// Elements one MPI call may take: MPI's counts and displacements are int.
constexpr int64_t max_mpi_count = INT_MAX;

// Callbacks over a duplicate of `comm`, a valid intracommunicator (collective
// over it), with MPI_ERRORS_RETURN on the duplicate; destroy(user_data) frees
// the duplicate. Each MPI call takes at most `max_piece` elements: the
// library passes max_mpi_count, tests less, to reach the split paths with
// small buffers. Throws Refusal (FP8RL_ERROR_DISTRIBUTED) if MPI fails to
// duplicate; nothing is left allocated then.
fp8rl_collective_callbacks make_mpi_callbacks(MPI_Comm comm, int64_t max_piece);

}  // namespace fp8rl::mpi
