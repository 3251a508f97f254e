// The data-parallel world the program runs in: one process, or the ranks of
// an MPI job when an MPI launcher (mpirun, mpiexec, srun) started it. Every
// command runs in it; `fp8rl train` trains data-parallel over it, rank 0
// alone writing the progress line, metrics, plots, summary and final policy.
#ifndef FP8RL_TOOLS_WORLD_H
#define FP8RL_TOOLS_WORLD_H

#include <fp8rl/fp8rl.h>

#include <string>
#include <vector>

namespace fp8rl_cli {

class World {
 public:
  // Under a launcher: initializes MPI and a communicator over MPI_COMM_WORLD
  // (LibraryError when this build has no MPI, FP8RL_MPI=OFF).
  World();
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool leader() const { return rank_ == 0; }
  // NULL in a single process; given to every context.
  fp8rl_communicator* communicator() const { return communicator_; }
  // "MPI, rank 1 of 2" or "single process".
  std::string description() const;
  // A command that failed on this rank ends the whole MPI job (MPI_Abort):
  // the other ranks may be waiting for it in a collective, and a rank that
  // finalized normally would leave them waiting. Nothing in one process.
  void end_job_after_failure(int status) const;

 private:
  int rank_ = 0, size_ = 1;
  fp8rl_communicator* communicator_ = nullptr;
};

// The process's world: main() creates it before any command runs and
// registers it here for the program's lifetime.
const World& world();
void set_world(const World* world);

// True when an MPI launcher started this process (its environment says so).
bool started_by_mpi_launcher();

// This rank's share of `all`: the elements [r * n / N, (r + 1) * n / N), so
// whole items (GRPO groups, SFT problems) never span ranks.
template <class T>
std::vector<T> rank_share(const std::vector<T>& all) {
  const auto n = static_cast<long long>(all.size());
  const long long r = world().rank(), size = world().size();
  return std::vector<T>(all.begin() + r * n / size, all.begin() + (r + 1) * n / size);
}

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_WORLD_H
