// Saves that overlap or die: two threads saving into one folder both succeed
// and leave one whole model; temporaries of killed saves are removed by the
// next save, while a live writer's temporary is left alone.
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>

#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "capi/capi_policy_fixture.h"
#include "hardening/hardening_support.h"

namespace hardening_test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> temporaries_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) names.push_back(name);
  }
  return names;
}

int64_t loaded_vocab(fp8rl_context* context, const std::string& folder) {
  fp8rl_policy* policy = nullptr;
  const Outcome outcome = outcome_of(fp8rl_policy_load(context, folder.c_str(), &policy));
  REQUIRE_MESSAGE(outcome.status == FP8RL_OK, outcome.message);
  fp8rl_model_config config;
  REQUIRE(fp8rl_model_config_init(&config) == FP8RL_OK);
  REQUIRE(fp8rl_policy_get_config(policy, &config) == FP8RL_OK);
  fp8rl_policy_destroy(policy);
  return config.vocab_size;
}

}  // namespace

TEST_CASE("concurrent saves: two threads saving different policies into one folder all succeed, one model results") {
  TempDir dir;
  constexpr int kSavesPerThread = 60;
  std::atomic<int> failures{0};
  std::string first_failure;
  std::mutex failure_mutex;
  const auto saver = [&](int64_t vocab) {
    CpuContext context(1);
    fp8rl_model_config config = capi_test::rl_loop_config();
    config.vocab_size = vocab;
    capi_test::Policy policy(context.get(), config);
    for (int i = 0; i < kSavesPerThread; ++i) {
      const Outcome outcome = outcome_of(fp8rl_policy_save(policy.get(), dir.path().c_str(), FP8RL_DTYPE_BF16));
      if (outcome.status != FP8RL_OK && failures++ == 0) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        first_failure = outcome.message;
      }
    }
  };
  std::thread a(saver, 32), b(saver, 48);
  a.join();
  b.join();
  CHECK_MESSAGE(failures == 0, failures.load() << " of " << 2 * kSavesPerThread << " saves failed: " << first_failure);
  CpuContext context;
  const int64_t vocab = loaded_vocab(context.get(), dir.path().string());  // a whole model of one saver
  CHECK((vocab == 32 || vocab == 48));
  CHECK(temporaries_in(dir.path().string()).empty());
}

TEST_CASE("abandoned temporaries: the next save removes those of dead writers, keeps a live one and unrelated files") {
  CpuContext context;
  capi_test::Policy policy(context.get(), capi_test::rl_loop_config());
  TempDir dir;
  REQUIRE(fp8rl_policy_save(policy.get(), dir.path().c_str(), FP8RL_DTYPE_BF16) == FP8RL_OK);
  for (const char* name : {"config.json.tmp.4001.0", "model.safetensors.tmp.4001.1",
                           "model-00001-of-00002.safetensors.tmp.77.3", "notes.txt.tmp.1.2", "model.safetensors.tmp"}) {
    write_bytes(dir.file(name), std::string(1000, 'x'));
  }
  // A writer still at work holds its temporary locked.
  const std::string live = dir.file("model.safetensors.tmp.4002.0");
  write_bytes(live, "partial");
  const int live_fd = ::open(live.c_str(), O_RDONLY);
  REQUIRE(live_fd >= 0);
  REQUIRE(::flock(live_fd, LOCK_EX) == 0);

  REQUIRE(fp8rl_policy_save(policy.get(), dir.path().c_str(), FP8RL_DTYPE_BF16) == FP8RL_OK);
  std::vector<std::string> left = temporaries_in(dir.path().string());
  std::sort(left.begin(), left.end());
  std::string listing;
  for (const std::string& name : left) listing += name + " ";
  CHECK(listing == "model.safetensors.tmp.4002.0 notes.txt.tmp.1.2 ");
  CHECK(fs::exists(dir.file("model.safetensors.tmp")));  // not a name a save makes
  ::close(live_fd);
}

TEST_CASE("abandoned temporaries: the next training-state save removes its file's dead temporaries") {
  CpuContext context;
  capi_test::Policy policy(context.get(), capi_test::rl_loop_config());
  fp8rl_trainer_options options;
  REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
  fp8rl_trainer* trainer = nullptr;
  REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);
  TempDir dir;
  write_bytes(dir.file("state.safetensors.tmp.4001.9"), std::string(1000, 'x'));
  write_bytes(dir.file("other.safetensors.tmp.4001.9"), std::string(10, 'x'));
  CHECK(fp8rl_trainer_save_state(trainer, dir.file("state.safetensors").c_str()) == FP8RL_OK);
  CHECK(temporaries_in(dir.path().string()) == std::vector<std::string>{"other.safetensors.tmp.4001.9"});
  fp8rl_trainer_destroy(trainer);
}

TEST_CASE("killed saves: SIGKILL mid-save leaves a loadable folder, and the next save removes the temporaries") {
  CpuContext context;
  capi_test::Policy policy(context.get(), capi_test::rl_loop_config());
  TempDir dir;
  const std::string folder = dir.path().string();
  REQUIRE(fp8rl_policy_save(policy.get(), folder.c_str(), FP8RL_DTYPE_BF16) == FP8RL_OK);
  std::mt19937 random(12345);
  int left_behind = 0;
  for (int round = 0; round < 6; ++round) {
    std::vector<char*> argv;
    std::string program = FP8RL_HARDENING_CHILD, mode = "save-loop", target = folder;
    for (std::string* argument : {&program, &mode, &target}) argv.push_back(argument->data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + random() % 300));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    left_behind += static_cast<int>(temporaries_in(folder).size());
    CHECK(loaded_vocab(context.get(), folder) == capi_test::rl_loop_config().vocab_size);
    REQUIRE(fp8rl_policy_save(policy.get(), folder.c_str(), FP8RL_DTYPE_BF16) == FP8RL_OK);
    CHECK(temporaries_in(folder).empty());
  }
  MESSAGE(left_behind << " temporaries left by 6 killed saves, all removed by the next save");
}

}  // namespace hardening_test
