// libFuzzer target: a sharded Hugging Face model folder through
// fp8rl_policy_load (index parsing, shard-name checks, tensors spread over
// shards), then one forward pass.
//
// Input: config.json <sep> model.safetensors.index.json <sep> shard 1 <sep>
// shard 2 (fuzz_support.h), written under the fixed names below, which the
// seed indexes use; an index may name any other file, which then does not
// exist. Fewer separators leave the later files out; the last shard present
// may contain separator bytes, the first of two may not.
#include "fuzz_support.h"

namespace {

constexpr const char* kShardNames[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> files = fp8rl_fuzz::split_files(data, size, 4);
  const fp8rl_fuzz::TempFolder folder;
  folder.write("config.json", files[0]);
  if (files.size() > 1) folder.write("model.safetensors.index.json", files[1]);
  for (size_t shard = 0; shard + 2 < files.size(); ++shard) folder.write(kShardNames[shard], files[shard + 2]);
  fp8rl_fuzz::load_policy(folder);
  return 0;
}
