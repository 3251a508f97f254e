// FP8 block-quantized checkpoints in: folders written by the independent
// writer make_fp8_hf_folder.py (numpy + ml_dtypes) load into masters equal to
// numpy's code * scale, FP8 compute copies equal to the stored bits, and
// logits and exports that say the same.
#include <doctest/doctest.h>

#include "core/model/fp8_checkpoint.h"
#include "core/model/hf_checkpoint_load.h"
#include "core/policy/fp8_export.h"
#include "core/policy/policy_load.h"
#include "model/fp8_checkpoint_test_support.h"
#include "policy/policy_test_support.h"

namespace fp8rl::test {
namespace {

std::unique_ptr<policy::Policy> load_policy(Context& context, const std::string& folder) {
  model::LoadedCheckpoint checkpoint = model::load_hf_checkpoint(folder);
  const policy::Recipe recipe = policy::checkpoint_recipe(checkpoint);
  return policy::policy_from_checkpoint(context, std::move(checkpoint), recipe);
}

std::vector<float> logits_of(policy::Policy& policy) {
  const FlatSequences prompts = test_prompts({5, 9, 3}, policy.config().vocab_size);
  return rollout::full_logits(policy, prompts.view());
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The masters are numpy's float32(code) * float32(scale), bit for bit, every
// other tensor the stored value; the FP8 compute copies of stored FP8
// weights are the stored codes and scales.
void check_loaded(const Fp8Folder& folder) {
  Context context(cpu_request(2), Logger());
  model::LoadedCheckpoint checkpoint = model::load_hf_checkpoint(folder.model);
  const std::vector<std::string> quantized = read_lines(folder.expected + "/quantized.txt");
  REQUIRE_FALSE(quantized.empty());
  std::vector<std::string> loaded;
  for (const auto& entry : checkpoint.fp8_weights) loaded.push_back(entry.first);
  CHECK(loaded == [&] { auto sorted = quantized; std::sort(sorted.begin(), sorted.end()); return sorted; }());

  const policy::Recipe recipe = policy::checkpoint_recipe(checkpoint);
  CHECK(recipe.linear == policy::Precision::fp8);
  CHECK(recipe.scale_format == ScaleFormat::fp32);
  auto policy = policy::policy_from_checkpoint(context, std::move(checkpoint), recipe);
  std::string difference;
  for (const auto& [name, tensor] : named_tensors(policy->params())) {
    CAPTURE(name);
    CHECK_MESSAGE(same_bits(tensor->data, read_f32(folder.expected + "/" + name + ".f32"), difference), difference);
  }
  const std::map<std::string, CopyBits> copies = fp8_copy_bits(*policy);
  for (const std::string& name : quantized) {
    CAPTURE(name);
    REQUIRE(copies.count(name) == 1);
    CHECK(copies.at(name).codes == read_bytes(folder.expected + "/" + name + ".codes"));
    CHECK_MESSAGE(same_bits(copies.at(name).scales, read_f32(folder.expected + "/" + name + ".scales"), difference),
                  difference);
  }
}

}  // namespace

TEST_CASE("FP8 checkpoint: masters are code * scale, FP8 compute copies the stored bits (single, sharded, F32/BF16 "
          "scales)") {
  TempDir temp;
  std::vector<Fp8FolderSpec> specs;
  for (const char* model : {"llama_wide", "qwen3_wide"})
    for (const char* layout : {"single", "sharded"})
      for (const char* scales : {"F32", "BF16"}) specs.push_back({model, layout, scales});
  specs.push_back({"qwen2", "single", "F32"});  // biases, one 128x128 block per weight
  specs.push_back({"llama_wide", "sharded", "BF16", "amax"});
  const std::vector<Fp8Folder> folders = make_fp8_folders(temp, specs);
  for (size_t i = 0; i < specs.size(); ++i) {
    CAPTURE(specs[i].key());
    check_loaded(folders[i]);
  }
}

TEST_CASE("FP8 checkpoint: the stored bits are installed, not requantized (which would change random blocks)") {
  // What makes the previous test able to fail: requantizing the masters of
  // arbitrary codes and scales gives other scales.
  TempDir temp;
  const Fp8Folder folder = make_fp8_folders(temp, {Fp8FolderSpec{}})[0];
  Context context(cpu_request(1), Logger());
  auto policy = load_policy(context, folder.model);
  const std::map<std::string, CopyBits> stored = fp8_copy_bits(*policy);
  policy->refit();
  const std::map<std::string, CopyBits> requantized = fp8_copy_bits(*policy);
  int64_t differing = 0;
  for (const auto& [name, bits] : stored) differing += bits.scales != requantized.at(name).scales ? 1 : 0;
  CHECK(differing > 0);
}

TEST_CASE("FP8 checkpoint: logits equal those of the dequantized weights where that is true") {
  TempDir temp;
  const std::vector<Fp8Folder> folders = make_fp8_folders(
      temp, {{"llama_wide", "single", "F32", "amax"}, {"qwen3_wide", "sharded", "BF16", "amax"}, {"llama_wide"}});
  Context context(cpu_request(2), Logger());
  policy::Recipe fp8;
  fp8.linear = policy::Precision::fp8;
  for (const Fp8Folder& folder : folders) {
    CAPTURE(folder.model);
    auto from_fp8 = load_policy(context, folder.model);
    policy::Policy from_dequantized(context, model::load_hf_model(folder.dequantized()), fp8);
    const bool amax_scales = folder.model.find("-amax-") != std::string::npos;
    // Scales that are amax / 448 of their blocks (DeepSeek-style quantizers,
    // fp8rl's export) are what requantizing their dequantization gives back,
    // so both policies run the same FP8 weights; arbitrary ones are not.
    CHECK(same_floats(logits_of(*from_fp8), logits_of(from_dequantized)) == amax_scales);
    // Under a BF16 recipe both run the BF16 rounding of the same masters.
    from_fp8->set_recipe(policy::Recipe{});
    from_dequantized.set_recipe(policy::Recipe{});
    CHECK(same_floats(logits_of(*from_fp8), logits_of(from_dequantized)));
  }
}

TEST_CASE("FP8 checkpoint: a BF16 recipe runs the dequantized masters, and so do linears a recipe keeps BF16") {
  TempDir temp;
  const Fp8Folder folder = make_fp8_folders(temp, {{"qwen3_wide", "single", "BF16"}})[0];
  Context context(cpu_request(2), Logger());
  policy::Recipe mixed;
  mixed.linear = policy::Precision::fp8;
  mixed.bf16_first_layers = 1;
  auto policy = policy::policy_from_checkpoint(context, model::load_hf_checkpoint(folder.model), mixed);
  const std::map<std::string, CopyBits> copies = fp8_copy_bits(*policy);
  CHECK(copies.count("model.layers.0.self_attn.q_proj.weight") == 0);  // BF16 from its masters
  CHECK(copies.at("model.layers.1.self_attn.q_proj.weight").codes ==
        read_bytes(folder.expected + "/model.layers.1.self_attn.q_proj.weight.codes"));
  policy::Policy reference(context, model::load_hf_model(folder.dequantized()), mixed);
  CHECK(same_floats(logits_of(*policy), logits_of(reference)) == false);  // layer 1 runs the stored bits
  policy->set_recipe(policy::Recipe{});
  reference.set_recipe(policy::Recipe{});
  CHECK(same_floats(logits_of(*policy), logits_of(reference)));
}

TEST_CASE("FP8 checkpoint: export -> load -> export writes the same bytes, single and sharded") {
  TempDir temp;
  const std::vector<Fp8Folder> folders =
      make_fp8_folders(temp, {{"llama_wide", "single", "BF16"}, {"qwen3_wide", "sharded", "F32", "amax"}});
  Context context(cpu_request(2), Logger());
  for (const Fp8Folder& folder : folders) {
    for (int64_t shard_bytes : {int64_t{5} << 30, int64_t{60000}}) {
      CAPTURE(folder.model);
      CAPTURE(shard_bytes);
      const std::string first = temp.file("first"), second = temp.file("second");
      std::filesystem::remove_all(first);
      std::filesystem::remove_all(second);
      auto loaded = load_policy(context, folder.model);
      policy::export_fp8_checkpoint(*loaded, first, shard_bytes);
      // The export writes the stored FP8 weights as they are.
      const model::LoadedCheckpoint exported = model::load_hf_checkpoint(first);
      for (const std::string& name : read_lines(folder.expected + "/quantized.txt")) {
        CAPTURE(name);
        CHECK(exported.fp8_weights.at(name).codes == read_bytes(folder.expected + "/" + name + ".codes"));
      }
      auto reloaded = load_policy(context, first);
      policy::export_fp8_checkpoint(*reloaded, second, shard_bytes);
      check_same_files(first, second);
    }
  }
}

TEST_CASE("FP8 checkpoint: an export holds masters that moved since the compute copies were made") {
  // As after a training step without recalibration: the stored bits no longer
  // hold the masters, so the export quantizes the masters, as it would for a
  // policy built from them.
  TempDir temp;
  const Fp8Folder folder = make_fp8_folders(temp, {Fp8FolderSpec{}})[0];
  Context context(cpu_request(1), Logger());
  auto loaded = load_policy(context, folder.model);
  const std::string moved = "model.layers.0.mlp.up_proj.weight", kept = "model.layers.1.mlp.up_proj.weight";
  loaded->host_tensors().layers[0].up_proj.data[7] += 0.25f;
  policy::export_fp8_checkpoint(*loaded, temp.file("trained"));
  policy::Policy fresh(context, loaded->params(), loaded->recipe());
  policy::export_fp8_checkpoint(fresh, temp.file("fresh"));
  const model::LoadedCheckpoint trained = model::load_hf_checkpoint(temp.file("trained"));
  const model::LoadedCheckpoint reference = model::load_hf_checkpoint(temp.file("fresh"));
  CHECK(trained.fp8_weights.at(moved).codes == reference.fp8_weights.at(moved).codes);
  CHECK(trained.fp8_weights.at(moved).scales == reference.fp8_weights.at(moved).scales);
  CHECK(trained.fp8_weights.at(kept).codes == read_bytes(folder.expected + "/" + kept + ".codes"));
  CHECK(trained.fp8_weights.at(kept).scales != reference.fp8_weights.at(kept).scales);  // the stored bits, not these
}

TEST_CASE("FP8 checkpoint: modules_to_not_convert names modules by whole dotted parts") {
  model::Fp8QuantizationConfig config{{"lm_head", "mlp.gate", "model.layers.*.self_attn.o_proj"}};
  CHECK(config.excluding_entry("lm_head") != nullptr);
  CHECK(config.excluding_entry("model.layers.3.mlp.gate") != nullptr);
  CHECK(config.excluding_entry("model.layers.3.mlp.gate_proj") == nullptr);
  CHECK(config.excluding_entry("model.layers.3.mlp.experts.7.gate_proj") == nullptr);
  CHECK(*config.excluding_entry("model.layers.12.self_attn.o_proj") == "model.layers.*.self_attn.o_proj");
  CHECK(config.excluding_entry("model.layers.x.self_attn.o_proj") == nullptr);
  CHECK(config.excluding_entry("model.layers.1.self_attn.q_proj") == nullptr);
}

}  // namespace fp8rl::test
