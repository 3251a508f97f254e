// The NCCL functions of the C API in whatever build runs them: without the
// CUDA backend they answer FP8RL_ERROR_UNSUPPORTED, after checking their
// arguments; with it, on a machine without NCCL or a GPU, they say which is
// missing. (tests/gpu/nccl_gpu_test.cpp runs the communicator on GPUs; the
// bad-input table checks that each bad argument is named.)
#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>

#include <cstdint>
#include <string>

namespace {

bool cuda_compiled() {
  uint32_t features = 0;
  REQUIRE(fp8rl_build_features(&features) == FP8RL_OK);
  return (features & FP8RL_FEATURE_CUDA) != 0;
}

std::string last_message() { return fp8rl_last_error_message(); }

}  // namespace

TEST_CASE("nccl: a build without the CUDA backend answers UNSUPPORTED and says why") {
  if (cuda_compiled()) {
    MESSAGE("this build has the CUDA backend: see the next test");
    return;
  }
  uint8_t id[128] = {};
  CHECK(fp8rl_nccl_unique_id(id) == FP8RL_ERROR_UNSUPPORTED);
  CHECK(last_message().rfind("fp8rl_nccl_unique_id: ", 0) == 0);
  CHECK(last_message().find("CUDA") != std::string::npos);
  fp8rl_communicator* communicator = nullptr;
  CHECK(fp8rl_communicator_create_nccl(id, 0, 1, 0, 10.0, &communicator) == FP8RL_ERROR_UNSUPPORTED);
  CHECK(last_message().rfind("fp8rl_communicator_create_nccl: ", 0) == 0);
  CHECK(last_message().find("CUDA") != std::string::npos);
  CHECK(communicator == nullptr);
}

TEST_CASE("nccl: a CUDA build says which of NCCL and the GPU is missing, or joins a group of one") {
  if (!cuda_compiled()) {
    MESSAGE("this build has no CUDA backend: see the previous test");
    return;
  }
  uint8_t id[128] = {};
  const fp8rl_status made = fp8rl_nccl_unique_id(id);
  if (made != FP8RL_OK) {
    CHECK(made == FP8RL_ERROR_BACKEND_UNAVAILABLE);
    CHECK(last_message().find("libnccl.so.2") != std::string::npos);
    return;
  }
  fp8rl_communicator* communicator = nullptr;
  const fp8rl_status created = fp8rl_communicator_create_nccl(id, 0, 1, 0, 30.0, &communicator);
  if (created != FP8RL_OK) {
    CHECK(created == FP8RL_ERROR_BACKEND_UNAVAILABLE);  // no GPU here
    CHECK(last_message().find("CUDA device 0") != std::string::npos);
    CHECK(communicator == nullptr);
    return;
  }
  int32_t rank = -1, world = -1;
  CHECK(fp8rl_communicator_get_rank(communicator, &rank, &world) == FP8RL_OK);
  CHECK(rank == 0);
  CHECK(world == 1);
  CHECK(fp8rl_communicator_destroy(communicator) == FP8RL_OK);
}

TEST_CASE("nccl: arguments are checked before anything else, in every build") {
  uint8_t id[128] = {};
  fp8rl_communicator* communicator = nullptr;
  CHECK(fp8rl_nccl_unique_id(nullptr) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(last_message() == "fp8rl_nccl_unique_id: out_id is NULL");
  CHECK(fp8rl_communicator_create_nccl(id, 2, 2, 0, 10.0, &communicator) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(last_message() == "fp8rl_communicator_create_nccl: rank is 2; expected 0 to world_size - 1 = 1");
  CHECK(communicator == nullptr);
}
