// The world of a build with MPI (FP8RL_MPI=ON): MPI_COMM_WORLD through libfp8rl_mpi.
#include <fp8rl/fp8rl_mpi.h>
#include <mpi.h>

#include "cli_error.h"
#include "world.h"

namespace fp8rl_cli {

World::World() {
  if (!started_by_mpi_launcher()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS) throw LibraryError("MPI_Init failed");
  check(fp8rl_mpi_communicator_create(MPI_Comm_c2f(MPI_COMM_WORLD), &communicator_), "fp8rl_mpi_communicator_create");
  check(fp8rl_communicator_get_rank(communicator_, &rank_, &size_), "fp8rl_communicator_get_rank");
}

void World::end_job_after_failure(int status) const {
  if (communicator_ != nullptr && size_ > 1) MPI_Abort(MPI_COMM_WORLD, status);
}

World::~World() {
  if (communicator_ == nullptr) return;
  fp8rl_communicator_destroy(communicator_);  // contexts are gone: the last reference frees the MPI duplicate
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace fp8rl_cli
