// Helpers of the FP8 checkpoint suites: folders from the independent writer
// (tests/model/make_fp8_hf_folder.py, run as this target's
// FP8RL_MODEL_ORACLE_SCRIPT), the compute copies read back, folder equality.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/policy/compiled_model.h"
#include "core/policy/policy.h"
#include "model/checkpoint_test_support.h"
#include "model/same_files.h"

namespace fp8rl::test {

// One folder for make_fp8_hf_folder.py make.
struct Fp8FolderSpec {
  std::string model = "llama_wide";
  std::string layout = "single";       // single | sharded
  std::string scale_dtype = "F32";     // F32 | BF16
  std::string style = "random";        // random | amax
  std::string corruption = "none";

  std::string key() const {
    std::string text = model + "-" + layout + "-" + scale_dtype + "-" + style + "-" + corruption;
    std::replace(text.begin(), text.end(), ':', '_');
    return text;
  }
};

// Where make_fp8_hf_folder.py wrote a spec: the model folder and the expected values.
struct Fp8Folder {
  std::string model;
  std::string expected;
  std::string dequantized() const { return expected + "/dequantized"; }
};

// Writes every spec's folder under temp in one Python process.
inline std::vector<Fp8Folder> make_fp8_folders(TempDir& temp, const std::vector<Fp8FolderSpec>& specs) {
  std::vector<Fp8Folder> folders;
  std::vector<std::vector<std::string>> commands;
  for (const Fp8FolderSpec& spec : specs) {
    folders.push_back({temp.file(spec.key()), temp.file(spec.key() + ".expected")});
    commands.push_back({"make", folders.back().model, folders.back().expected, spec.model, spec.layout,
                        spec.scale_dtype, spec.style, spec.corruption});
  }
  REQUIRE(run_model_oracle_batch(temp.file("fp8-commands.txt"), commands) == 0);
  return folders;
}

inline std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// An FP8 compute copy as it is on the backend.
struct CopyBits {
  std::vector<uint8_t> codes;  // [out, in] E4M3
  std::vector<float> scales;   // [ceil(out / 128), ceil(in / 128)]
};

// The policy's FP8 compute copies by the name of their master tensor.
inline std::map<std::string, CopyBits> fp8_copy_bits(policy::Policy& policy) {
  std::map<const model::HostTensor*, std::string> names;
  for (const auto& [name, tensor] : named_tensors(policy.params())) names.emplace(tensor, name);
  std::map<std::string, CopyBits> out;
  Backend& backend = policy.context().backend();
  for (const policy::ComputeCopy& copy : policy.compiled_for_refit().copies(policy.params())) {
    if (copy.kind != policy::ComputeCopy::Kind::fp8) continue;
    CopyBits bits{std::vector<uint8_t>(static_cast<size_t>(copy.rows * copy.cols)),
                  std::vector<float>(copy.scale_bytes_before(copy.rows) / sizeof(float))};
    backend.download(bits.codes.data(), copy.values, bits.codes.size());
    backend.download(bits.scales.data(), copy.scales, bits.scales.size() * sizeof(float));
    out.emplace(names.at(copy.master), std::move(bits));
  }
  return out;
}

}  // namespace fp8rl::test
