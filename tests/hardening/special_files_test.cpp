// Named pipes, devices, folders and symlink loops in place of the files a
// load reads: each is refused with an error naming the path, promptly (a
// FIFO opened for reading would block until a writer came).
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "capi/capi_policy_fixture.h"
#include "hardening/hardening_support.h"

namespace hardening_test {
namespace {

namespace fs = std::filesystem;

// A saved tiny policy: config.json and model.safetensors.
void save_tiny_policy(fp8rl_context* context, const std::string& folder) {
  capi_test::Policy policy(context, capi_test::rl_loop_config());
  REQUIRE_MESSAGE(fp8rl_policy_save(policy.get(), folder.c_str(), FP8RL_DTYPE_BF16) == FP8RL_OK,
                  std::string(fp8rl_last_error_message()));
}

void replace_with_fifo(const std::string& path) {
  fs::remove(path);
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
}

void check_policy_load_refused(fp8rl_context* context, const std::string& folder, const std::string& culprit) {
  fp8rl_policy* policy = nullptr;
  const Outcome outcome =
      within_deadline([&] { return fp8rl_policy_load(context, folder.c_str(), &policy); }, culprit);
  CHECK(outcome.status != FP8RL_OK);
  CHECK_MESSAGE(outcome.message.find(fs::path(culprit).filename().string()) != std::string::npos, outcome.message);
  CHECK(policy == nullptr);
  fp8rl_policy_destroy(policy);
}

}  // namespace

TEST_CASE("special files: a named pipe as config.json, model.safetensors or a shard is refused, not waited on") {
  CpuContext context;
  for (const char* file : {"config.json", "model.safetensors"}) {
    CAPTURE(file);
    TempDir dir;
    save_tiny_policy(context.get(), dir.path().string());
    replace_with_fifo(dir.file(file));
    check_policy_load_refused(context.get(), dir.path().string(), dir.file(file));
  }
  for (const char* file : {"model.safetensors.index.json", "model-00001-of-00001.safetensors"}) {
    CAPTURE(file);
    TempDir dir;
    save_tiny_policy(context.get(), dir.path().string());
    fs::remove(dir.file("model.safetensors"));
    write_bytes(dir.file("model.safetensors.index.json"),
                "{\"weight_map\": {\"model.embed_tokens.weight\": \"model-00001-of-00001.safetensors\"}}");
    write_bytes(dir.file("model-00001-of-00001.safetensors"), safetensors_bytes("{}"));
    replace_with_fifo(dir.file(file));
    check_policy_load_refused(context.get(), dir.path().string(), dir.file(file));
  }
}

TEST_CASE("special files: a named pipe as a training-state file is refused, not waited on") {
  CpuContext context;
  capi_test::Policy policy(context.get(), capi_test::rl_loop_config());
  fp8rl_trainer_options options;
  REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
  fp8rl_trainer* trainer = nullptr;
  REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);
  TempDir dir;
  const std::string state = dir.file("state.safetensors");
  REQUIRE(::mkfifo(state.c_str(), 0600) == 0);
  const Outcome outcome = within_deadline([&] { return fp8rl_trainer_load_state(trainer, state.c_str()); }, state);
  CHECK(outcome.status == FP8RL_ERROR_IO);
  CHECK_MESSAGE(outcome.message.find("named pipe") != std::string::npos, outcome.message);
  fp8rl_trainer_destroy(trainer);
}

TEST_CASE("special files: /dev/zero, a folder and a symlink loop in place of model files are refused") {
  CpuContext context;
  const auto prepare = [](const TempDir& dir, const char* file, const std::function<void(const std::string&)>& make) {
    fs::remove(dir.file(file));
    make(dir.file(file));
  };
  const std::vector<std::pair<const char*, std::function<void(const std::string&)>>> replacements = {
      {"/dev/zero", [](const std::string& path) { fs::create_symlink("/dev/zero", path); }},
      {"a folder", [](const std::string& path) { fs::create_directory(path); }},
      {"a symlink loop", [](const std::string& path) { fs::create_symlink(path, path); }},
  };
  for (const auto& [what, make] : replacements) {
    for (const char* file : {"config.json", "model.safetensors"}) {
      CAPTURE(what);
      CAPTURE(file);
      TempDir dir;
      save_tiny_policy(context.get(), dir.path().string());
      prepare(dir, file, make);
      fp8rl_policy* policy = nullptr;
      const Outcome outcome = outcome_of(fp8rl_policy_load(context.get(), dir.path().c_str(), &policy));
      CHECK(outcome.status == FP8RL_ERROR_IO);
      CHECK_MESSAGE(outcome.message.find(file) != std::string::npos, outcome.message);
      CHECK(policy == nullptr);
    }
  }
}

}  // namespace hardening_test
