// The NCCL entry points of a build that cannot have them: core/CMakeLists.txt
// compiles this file instead of nccl_communicator.cpp when the build has no
// CUDA backend, or has one but found no nccl.h (FP8RL_NCCL_HEADER_MISSING).
#include "core/dist/nccl_communicator.h"

#include "kernels/error.h"

namespace fp8rl::dist {
namespace {

[[noreturn]] void unavailable() {
  fail(Status::unsupported,
       FP8RL_NCCL_HEADER_MISSING
           ? "this build of fp8rl has no NCCL communicator: nccl.h was not found when it was configured"
           : "this build has no CUDA backend (NCCL works on GPU memory): configure fp8rl with -DFP8RL_CUDA=ON");
}

}  // namespace

NcclId nccl_unique_id() { unavailable(); }

std::shared_ptr<Communicator> make_nccl_communicator(const NcclSetup&) { unavailable(); }

}  // namespace fp8rl::dist
