#include "world.h"

#include <cstdlib>

namespace fp8rl_cli {
namespace {

const World* current_world = nullptr;

}  // namespace

const World& world() { return *current_world; }

void set_world(const World* world) { current_world = world; }

bool started_by_mpi_launcher() {
  // Open MPI's, MPICH/Hydra's and PMIx launchers (srun included) set these.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

std::string World::description() const {
  if (communicator_ == nullptr) return "single process";
  return "MPI, rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

}  // namespace fp8rl_cli
