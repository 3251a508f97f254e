// libFuzzer target: the JSON parser and the config.json reader. The header
// has no function that parses JSON text directly, so the input becomes
// config.json in a folder with no weights: fp8rl_policy_load parses and
// validates the config before it looks for weights, and must then fail.
//
// Input: the bytes of config.json, as they are (no split).
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fp8rl_fuzz::TempFolder folder;
  folder.write("config.json", std::string_view(reinterpret_cast<const char*>(data), size));
  fp8rl_policy* policy = nullptr;
  const std::string primed = fp8rl_fuzz::prime_error_message();
  const fp8rl_status status = fp8rl_policy_load(fp8rl_fuzz::context(), folder.path().c_str(), &policy);
  // With no weights file a load cannot succeed, whatever the config says.
  if (status == FP8RL_OK) fp8rl_fuzz::contract_violation("fp8rl_policy_load", status, "loaded a folder without weights");
  if (policy != nullptr) fp8rl_fuzz::contract_violation("fp8rl_policy_load", status, "failed but set out_policy");
  fp8rl_fuzz::check_failure("fp8rl_policy_load", status, fp8rl_fuzz::kLoadFailures, primed);
  return 0;
}
