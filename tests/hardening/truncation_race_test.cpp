// A checkpoint rewritten in place while it is loaded: the file shrinks under
// the reader. The load must fail with an error (or succeed on a consistent
// view) and never kill the process, as a memory-mapped reader does with
// SIGBUS when it touches pages past the new end of the file.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "capi/capi_policy_fixture.h"
#include "hardening/hardening_support.h"

namespace hardening_test {
namespace {

// About 4.7M weights (9 MB in BF16): large enough that loads and rewrites overlap.
fp8rl_model_config medium_config() {
  fp8rl_model_config config = capi_test::rl_loop_config();
  config.vocab_size = 4096;
  config.hidden_size = 256;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.intermediate_size = 1024;
  config.num_layers = 2;
  return config;
}

// Truncates the file and writes it again, as `cat new > file` would: loads
// that began on the whole file see it shrink under them.
void rewrite_in_place(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
  REQUIRE(fd >= 0);
  constexpr size_t kChunk = 1 << 20;
  for (size_t done = 0; done < bytes.size(); done += kChunk) {
    const size_t count = std::min(kChunk, bytes.size() - done);
    REQUIRE(::write(fd, bytes.data() + done, count) == static_cast<ssize_t>(count));
  }
  ::close(fd);
}

}  // namespace

TEST_CASE("truncation race: model.safetensors rewritten in place during loads gives errors, not SIGBUS") {
  CpuContext context;
  TempDir dir;
  {
    capi_test::Policy policy(context.get(), medium_config());
    REQUIRE(fp8rl_policy_save(policy.get(), dir.path().c_str(), FP8RL_DTYPE_BF16) == FP8RL_OK);
  }
  const std::string weights = dir.file("model.safetensors");
  const std::vector<uint8_t> bytes = fp8rl::test::read_bytes(weights);

  // The whole file stays for a varying while (a load's length or so), then is rewritten.
  constexpr int kRewrites = 20;
  std::atomic<bool> done{false};
  std::thread rewriter([&] {
    for (int i = 0; i < kRewrites; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + 13 * i % 40));
      rewrite_in_place(weights, bytes);
    }
    done = true;
  });
  int loads = 0, refused = 0;
  while (!done || loads < 3) {
    fp8rl_policy* policy = nullptr;
    const Outcome outcome = outcome_of(fp8rl_policy_load(context.get(), dir.path().c_str(), &policy));
    ++loads;
    if (outcome.status != FP8RL_OK) {
      ++refused;
      CHECK((outcome.status == FP8RL_ERROR_IO || outcome.status == FP8RL_ERROR_CORRUPT_DATA));
      CHECK_MESSAGE(outcome.message.find("model.safetensors") != std::string::npos, outcome.message);
    }
    fp8rl_policy_destroy(policy);
  }
  rewriter.join();
  MESSAGE(loads << " loads during " << kRewrites << " in-place rewrites, " << refused << " refused with an error");
  fp8rl_policy* policy = nullptr;
  CHECK(fp8rl_policy_load(context.get(), dir.path().c_str(), &policy) == FP8RL_OK);  // whole again
  fp8rl_policy_destroy(policy);
}

}  // namespace hardening_test
