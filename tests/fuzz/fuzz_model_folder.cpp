// libFuzzer target: a single-file Hugging Face model folder through
// fp8rl_policy_load (config parsing, safetensors header and data checks,
// tensor matching, BF16/F16/F32 widening), then one forward pass.
//
// Input: config.json <separator> model.safetensors (fuzz_support.h). Without
// a separator the folder holds config.json alone. Everything after the first
// separator is the weights file, separator bytes included.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> files = fp8rl_fuzz::split_files(data, size, 2);
  const fp8rl_fuzz::TempFolder folder;
  folder.write("config.json", files[0]);
  if (files.size() > 1) folder.write("model.safetensors", files[1]);
  fp8rl_fuzz::load_policy(folder);
  return 0;
}
