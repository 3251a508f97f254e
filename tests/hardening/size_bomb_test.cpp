// Size bombs: a few hundred bytes that claim a model of millions of layers or
// billions of weights must be refused before anything they claim is
// allocated. Each load runs in a child process whose peak memory is compared
// with a child that loads nothing.
#include <string>

#include "hardening/hardening_support.h"

namespace hardening_test {
namespace {

// Far below what the claims would take (gigabytes), far above the noise of
// parsing a small file.
constexpr int64_t kMaxExtraKib = 64 * 1024;

void check_refused_cheaply(const std::vector<std::string>& load, const char* needle) {
  const ChildResult baseline = run_child({"baseline"});
  REQUIRE(baseline.exit_code == FP8RL_OK);
  const ChildResult result = run_child(load);
  CHECK(result.signal == 0);
  CHECK(result.exit_code == FP8RL_ERROR_CORRUPT_DATA);
  CHECK_MESSAGE(result.peak_rss_kib - baseline.peak_rss_kib < kMaxExtraKib,
                "peak RSS " << result.peak_rss_kib << " KiB vs " << baseline.peak_rss_kib << " KiB loading nothing ("
                            << needle << ")");
}

// The fields of a training-state file's "__metadata__" with the given config.
std::string state_header(const std::string& config_json) {
  std::string escaped;
  for (const char c : config_json) escaped += (c == '"') ? std::string("\\\"") : std::string(1, c);
  const std::string recipe =
      "{\\\"linear\\\": \\\"bf16\\\", \\\"scale_format\\\": \\\"fp32\\\", \\\"kv_cache\\\": \\\"bf16\\\", "
      "\\\"attention\\\": \\\"bf16\\\", \\\"bf16_first_layers\\\": 0, \\\"bf16_last_layers\\\": 0}";
  return "{\"__metadata__\": {\"format\": \"fp8rl.training_state\", \"format_version\": \"1\", \"config\": \"" +
         escaped + "\", \"recipe\": \"" + recipe +
         "\", \"steps\": \"0\", \"optimizer_steps\": \"0\", \"rng_seed\": \"1\", \"rng_counter\": \"0\"}}";
}

}  // namespace

TEST_CASE("size bomb: a 200-byte config.json claiming 10 million layers is refused without allocating them") {
  TempDir dir;
  write_bytes(dir.file("config.json"), llama_config_json(10000000));
  write_bytes(dir.file("model.safetensors"), safetensors_bytes("{}"));
  check_refused_cheaply({"load-policy", dir.path().string()}, "10M layers");

  CpuContext context;
  fp8rl_policy* policy = nullptr;
  const Outcome refused = outcome_of(fp8rl_policy_load(context.get(), dir.path().c_str(), &policy));
  CHECK(refused.status == FP8RL_ERROR_CORRUPT_DATA);
  CHECK(refused.message.find("num_hidden_layers is 10000000, above this library's limit of 1024") !=
        std::string::npos);
  CHECK(policy == nullptr);
}

TEST_CASE("size bomb: a config within the limits but larger than its files is refused before allocation") {
  TempDir dir;
  // 1024 layers of hidden 65536: about 2^45 weights, backed by an empty file.
  write_bytes(dir.file("config.json"), llama_config_json(1024, 65536, 32000, 512));
  write_bytes(dir.file("model.safetensors"), safetensors_bytes("{}"));
  check_refused_cheaply({"load-policy", dir.path().string()}, "1024 wide layers");

  CpuContext context;
  fp8rl_policy* policy = nullptr;
  const Outcome refused = outcome_of(fp8rl_policy_load(context.get(), dir.path().c_str(), &policy));
  CHECK(refused.status == FP8RL_ERROR_CORRUPT_DATA);
  CHECK(refused.message.find("tensors (num_hidden_layers 1024), the files hold 0") != std::string::npos);
}

TEST_CASE("size bomb: a 900-byte training-state file claiming 10 million layers is refused cheaply") {
  TempDir dir;
  const std::string path = dir.file("state.safetensors");
  write_bytes(path, safetensors_bytes(state_header(llama_config_json(10000000))));
  check_refused_cheaply({"load-state", path}, "state file, 10M layers");
}

TEST_CASE("size bomb: a training-state file whose config outweighs its bytes is refused cheaply") {
  TempDir dir;
  const std::string path = dir.file("state.safetensors");
  // Tiny sizes but 1024 layers: more tensors than the file holds (none).
  write_bytes(path, safetensors_bytes(state_header(llama_config_json(1024))));
  check_refused_cheaply({"load-state", path}, "state file, 1024 layers");
}

}  // namespace hardening_test
