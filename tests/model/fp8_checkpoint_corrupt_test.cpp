// Corrupt and unsupported FP8 checkpoints, written by make_fp8_hf_folder.py:
// each is refused with its status and a message naming the file and the
// tensor (or config.json and the field).
#include <doctest/doctest.h>

#include "core/model/hf_checkpoint_load.h"
#include "model/fp8_checkpoint_test_support.h"

namespace fp8rl::test {
namespace {

struct CorruptCase {
  std::string corruption;
  Status status;
  std::vector<std::string> fragments;
  std::string layout = "single";
};

const char* const kQ = "model.layers.0.self_attn.q_proj.weight";
const char* const kGate = "model.layers.1.mlp.gate_proj.weight";

std::vector<CorruptCase> corrupt_cases() {
  const std::string q = kQ, gate = kGate;
  return {
      {"scale_shape:" + q, Status::corrupt_data, {"model.safetensors", q + "_scale_inv'", "[3, 2]", "[2, 2]"}},
      {"codes_dtype:" + gate + ":F16", Status::corrupt_data, {"model.safetensors", gate + "'", "F16", "F8_E4M3"}},
      {"codes_dtype:" + gate + ":BF16", Status::corrupt_data, {gate + "'", "BF16", "must be F8_E4M3"}},
      {"codes_dtype:" + gate + ":F8_E5M2", Status::corrupt_data, {gate + "'", "F8_E5M2"}},
      {"scale_dtype:" + q + ":I32", Status::corrupt_data, {q + "_scale_inv'", "I32", "F32 or BF16"}},
      {"no_scale:" + q, Status::corrupt_data, {"model.safetensors", q + "'", q + "_scale_inv'"}},
      {"no_scale:" + gate, Status::corrupt_data, {"model-0000", gate + "'", gate + "_scale_inv'"}, "sharded"},
      {"scale_nan:" + q, Status::non_finite, {q + "_scale_inv'", "block 0, 0", "NaN"}},
      {"scale_inf:" + gate, Status::non_finite, {gate + "_scale_inv'", "block 2, 1", "infinite"}},
      {"scale_negative:" + q, Status::corrupt_data, {q + "_scale_inv'", "block 0, 1", "> 0"}},
      {"scale_zero:" + gate, Status::corrupt_data, {gate + "_scale_inv'", "block 2, 0", "> 0"}},
      {"scale_huge:" + q, Status::non_finite, {"model.safetensors", q + "'", "infinite"}},
      {"nan_code:" + gate, Status::non_finite, {"model.safetensors", gate + "'", "element 5", "NaN"}},
      {"nan_code_neg:" + q, Status::non_finite, {q + "'", "element 5", "NaN"}},
      {"quantize:model.layers.0.input_layernorm.weight", Status::corrupt_data,
       {"model.safetensors", "'model.layers.0.input_layernorm.weight'", "keeps it unquantized"}},
      {"quantize:model.embed_tokens.weight", Status::corrupt_data,
       {"'model.embed_tokens.weight'", "keeps it unquantized"}},
      {"quantize:model.layers.1.mlp.down_proj.weight", Status::corrupt_data,
       {"'model.layers.1.mlp.down_proj.weight'", "modules_to_not_convert", "\"model.layers.1.mlp.down_proj\""}},
      {"no_quant_config", Status::corrupt_data, {"model.safetensors", "'model.layers.0.self_attn.q_proj.weight'",
                                                 "config.json has no quantization_config"}},
      {"quant_method:bitsandbytes", Status::unsupported, {"config.json", "quant_method \"bitsandbytes\""}},
      {"block:64", Status::unsupported, {"config.json", "weight_block_size [64, 64]"}},
      {"no_block_size", Status::unsupported, {"config.json", "no weight_block_size"}},
      {"fmt:e5m2", Status::unsupported, {"config.json", "fmt \"e5m2\""}},
      {"activation_scheme:static", Status::unsupported, {"config.json", "activation_scheme \"static\""}},
      {"block_not_pair", Status::corrupt_data, {"config.json", "weight_block_size", "pair of integers"}},
      {"modules_not_names", Status::corrupt_data, {"config.json", "modules_to_not_convert"}},
  };
}

}  // namespace

TEST_CASE("FP8 checkpoint: each corruption is refused with its status, naming the file and the tensor") {
  TempDir temp;
  const std::vector<CorruptCase> cases = corrupt_cases();
  std::vector<Fp8FolderSpec> specs;
  for (const CorruptCase& c : cases) specs.push_back({"llama_wide", c.layout, "F32", "random", c.corruption});
  const std::vector<Fp8Folder> folders = make_fp8_folders(temp, specs);
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(cases[i].corruption);
    expect_error([&] { model::load_hf_checkpoint(folders[i].model); }, cases[i].status, cases[i].fragments);
  }
}

TEST_CASE("FP8 checkpoint: the corruptions' folders load when left intact (the refusals are theirs)") {
  TempDir temp;
  const std::vector<Fp8Folder> folders =
      make_fp8_folders(temp, {{"llama_wide", "single", "F32", "random", "none"}, {"llama_wide", "sharded"}});
  for (const Fp8Folder& folder : folders) CHECK(model::load_hf_checkpoint(folder.model).fp8_weights.size() == 13);
}

}  // namespace fp8rl::test
