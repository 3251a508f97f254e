// The world of a build without MPI (FP8RL_MPI=OFF): one process, and a clear
// refusal when a launcher started several.
#include "cli_error.h"
#include "world.h"

namespace fp8rl_cli {

World::World() {
  if (started_by_mpi_launcher())
    throw LibraryError("started by an MPI launcher, but this fp8rl was built without MPI (FP8RL_MPI=OFF)");
}

World::~World() = default;

void World::end_job_after_failure(int /*status*/) const {}

}  // namespace fp8rl_cli
