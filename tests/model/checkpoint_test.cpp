// Hugging Face checkpoints against an independent oracle
// (tests/model/make_hf_folder.py: numpy + ml_dtypes + struct + json): folders
// it writes load bit-exactly here, folders saved here pass its reader and its
// own rounding to BF16/F16, and save -> load round-trips.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/model/half_codec.h"
#include "core/model/model_params.h"
#include "kernels/common/bf16_codec.h"
#include "model/checkpoint_test_support.h"

namespace {

using fp8rl::io::DType;
using fp8rl::model::HostTensor;
using fp8rl::model::ModelConfig;
using fp8rl::model::ModelFamily;
using fp8rl::model::ModelParams;
using fp8rl::test::named_tensors;
using fp8rl::test::TempDir;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Loads folders the oracle wrote and compares every tensor bit for bit with
// the oracle's widened values; the set of names must be the oracle's too.
// specs: {model, layout, dtype}.
void check_oracle_folders(const std::vector<std::vector<std::string>>& specs) {
  TempDir dir;
  std::vector<std::vector<std::string>> commands;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string n = std::to_string(i);
    commands.push_back({"make", dir.file("m" + n), dir.file("e" + n), specs[i][0], specs[i][1], specs[i][2]});
  }
  REQUIRE(fp8rl::test::run_model_oracle_batch(dir.file("commands.txt"), commands) == 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    CAPTURE(specs[i][0]);
    CAPTURE(specs[i][1]);
    CAPTURE(specs[i][2]);
    const std::string folder = commands[i][1], expected = commands[i][2];
    const ModelParams params = fp8rl::model::load_hf_model(folder);
    fp8rl::model::check_model_params(params);

    std::vector<std::string> oracle_names = read_lines(expected + "/names.txt");
    std::vector<std::string> names;
    for (const auto& [name, tensor] : named_tensors(params)) {
      CAPTURE(name);
      names.push_back(name);
      std::string difference;
      CHECK_MESSAGE(
          fp8rl::test::same_bits(tensor->data, fp8rl::test::read_f32(expected + "/" + name + ".f32"), difference),
          difference);
    }
    std::sort(names.begin(), names.end());
    std::sort(oracle_names.begin(), oracle_names.end());
    CHECK(names == oracle_names);
    if (params.config.tie_word_embeddings) CHECK(params.lm_head.empty());  // the oracle's junk lm_head is ignored
  }
}

ModelConfig tiny_config(ModelFamily family) {
  ModelConfig c;
  c.family = family;
  c.vocab_size = 23;
  c.hidden_size = 12;
  c.num_layers = 2;
  c.num_attention_heads = 3;
  c.num_key_value_heads = 1;
  c.head_dim = 4;
  c.intermediate_size = 18;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-5;
  c.attention_bias = family == ModelFamily::qwen2;
  c.qk_norm = family == ModelFamily::qwen3;
  if (family == ModelFamily::qwen3) {
    c.head_dim = 6;  // q_dim 18 != hidden 12
    c.head_dim_explicit = true;
  }
  c.tie_word_embeddings = family != ModelFamily::llama;
  return c;
}

// Random weights with values that exercise rounding: ties for BF16 and F16
// (to even, both directions), F16 subnormals and the values at F16's top.
ModelParams test_params(ModelFamily family, uint64_t seed) {
  fp8rl::model::RandomInitOptions options;
  options.std = 0.5f;
  options.perturb_norms_and_biases = true;
  ModelParams params = fp8rl::model::random_model_params(tiny_config(family), seed, options);
  const float specials[] = {
      1.0f + 0x1p-8f,  1.0f + 0x3p-8f,  -1.0f - 0x1p-8f,               // BF16 ties: down to even, up to even
      1.0f + 0x1p-11f, 1.0f + 0x3p-11f,                                // F16 ties
      0x1p-25f,        0x3p-25f,        0x1p-26f,        -0x1.8p-20f,  // F16 subnormal ties and below
      65504.0f,        65519.0f,        -65519.99f,      0.0f,        -0.0f, 1e-45f, 30000.5f,
  };
  std::copy(std::begin(specials), std::end(specials), params.embed_tokens.data.begin());
  return params;
}

// The float32 values and "name<TAB>shape" lines the oracle's check reads.
void write_reference(const std::string& dir, const ModelParams& params) {
  std::filesystem::create_directories(dir);
  std::ofstream names(dir + "/names.txt");
  for (const auto& [name, tensor] : named_tensors(params)) {
    names << name << '\t';
    for (size_t i = 0; i < tensor->shape.size(); ++i) names << (i ? "," : "") << tensor->shape[i];
    names << '\n';
    fp8rl::test::write_f32(dir + "/" + name + ".f32", tensor->data);
  }
}

int64_t total_bytes(const ModelParams& params, size_t element_size) {
  int64_t total = 0;
  for (const auto& entry : named_tensors(params))
    total += static_cast<int64_t>(entry.second->data.size() * element_size);
  return total;
}

// The documented greedy rule: a new shard when the next tensor would overflow.
int expected_shards(const ModelParams& params, size_t element_size, int64_t max_bytes) {
  int shards = 1;
  int64_t current = 0;
  for (const auto& entry : named_tensors(params)) {
    const int64_t bytes = static_cast<int64_t>(entry.second->data.size() * element_size);
    if (current > 0 && current + bytes > max_bytes) {
      ++shards;
      current = 0;
    }
    current += bytes;
  }
  return shards;
}

float rounded(float x, DType dtype) {
  if (dtype == DType::bf16) return fp8rl::bf16_round(x);
  if (dtype == DType::f16) return fp8rl::model::half_decode(fp8rl::model::half_encode(x));
  return x;
}

const char* dtype_arg(DType dtype) { return dtype == DType::f32 ? "F32" : dtype == DType::bf16 ? "BF16" : "F16"; }

}  // namespace

TEST_CASE("hf checkpoint: oracle folders of every family load exactly, single file and sharded") {
  std::vector<std::vector<std::string>> specs;
  for (const char* model : {"llama_tied", "llama_untied", "llama_bias", "qwen2", "qwen3"}) {
    for (const char* layout : {"single", "sharded"}) specs.push_back({model, layout, "mixed"});
  }
  check_oracle_folders(specs);
}

TEST_CASE("hf checkpoint: oracle folders in one dtype load exactly (F32, BF16, F16)") {
  check_oracle_folders({{"qwen3", "single", "F32"}, {"llama_bias", "sharded", "BF16"}, {"qwen2", "single", "F16"}});
}

TEST_CASE("hf checkpoint: loaded config and layout") {
  TempDir dir;
  REQUIRE(fp8rl::test::run_model_oracle({"make", dir.file("m"), dir.file("e"), "qwen3", "sharded", "BF16"}) == 0);
  const ModelParams params = fp8rl::model::load_hf_model(dir.file("m"));
  CHECK(params.config.family == ModelFamily::qwen3);
  CHECK(params.config.qk_norm);
  CHECK(params.layers.size() == 2);
  CHECK(params.layers[1].q_proj.shape == std::vector<int64_t>{24, 16});  // 4 heads x head_dim 6
  CHECK(params.layers[1].o_proj.shape == std::vector<int64_t>{16, 24});
  CHECK(params.layers[1].k_norm.shape == std::vector<int64_t>{6});
  CHECK(params.layers[0].q_bias.empty());
  CHECK(params.lm_head.shape == std::vector<int64_t>{29, 16});
}

TEST_CASE("hf checkpoint: saved folders pass the oracle's reader and rounding") {
  TempDir dir;
  std::vector<std::vector<std::string>> commands;
  for (ModelFamily family : {ModelFamily::llama, ModelFamily::qwen2, ModelFamily::qwen3}) {
    const ModelParams params = test_params(family, 11);
    const std::string ref = dir.file("ref" + std::to_string(static_cast<int>(family)));
    write_reference(ref, params);
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      const std::string prefix = ref + "_" + dtype_arg(dtype);
      fp8rl::model::save_hf_model(prefix + "_single", params, dtype);
      commands.push_back({"check", prefix + "_single", ref, dtype_arg(dtype), "single", "1"});

      const size_t element_size = fp8rl::io::dtype_size(dtype);
      const int64_t max_bytes = total_bytes(params, element_size) / 4;
      const int shards = expected_shards(params, element_size, max_bytes);
      REQUIRE(shards > 2);
      fp8rl::model::save_hf_model(prefix + "_sharded", params, dtype, max_bytes);
      commands.push_back({"check", prefix + "_sharded", ref, dtype_arg(dtype), "sharded", std::to_string(shards)});
    }
  }
  CHECK(fp8rl::test::run_model_oracle_batch(dir.file("commands.txt"), commands) == 0);
}

TEST_CASE("hf checkpoint: save -> load round trip, single and sharded") {
  for (ModelFamily family : {ModelFamily::llama, ModelFamily::qwen2, ModelFamily::qwen3}) {
    const ModelParams params = test_params(family, 5);
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      for (int64_t max_bytes : {int64_t{1} << 30, int64_t{1000}}) {
        CAPTURE(static_cast<int>(family));
        CAPTURE(dtype_arg(dtype));
        CAPTURE(max_bytes);
        TempDir dir;
        fp8rl::model::save_hf_model(dir.file("m"), params, dtype, max_bytes);
        const ModelParams loaded = fp8rl::model::load_hf_model(dir.file("m"));
        CHECK(loaded.config.family == params.config.family);
        CHECK(loaded.config.head_dim == params.config.head_dim);
        CHECK(loaded.config.tie_word_embeddings == params.config.tie_word_embeddings);
        const auto original = named_tensors(params), back = named_tensors(loaded);
        REQUIRE(original.size() == back.size());
        for (size_t t = 0; t < original.size(); ++t) {
          CAPTURE(original[t].first);
          REQUIRE(back[t].first == original[t].first);
          CHECK(back[t].second->shape == original[t].second->shape);
          std::vector<float> expected = original[t].second->data;
          for (float& x : expected) x = rounded(x, dtype);
          std::string difference;
          CHECK_MESSAGE(fp8rl::test::same_bits(back[t].second->data, expected, difference), difference);
        }
      }
    }
  }
}

TEST_CASE("hf checkpoint: saving over an earlier save leaves no stale weights") {
  namespace fs = std::filesystem;
  TempDir dir;
  const std::string folder = dir.file("m");
  const ModelParams params = test_params(ModelFamily::qwen2, 3);
  const auto files = [&] {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) names.insert(entry.path().filename().string());
    return names;
  };
  fp8rl::model::save_hf_model(folder, params, DType::f32, 200);  // many shards
  fp8rl::test::write_bytes(folder + "/tokenizer.json", "{}");    // not ours: must survive
  const size_t many = files().size();
  REQUIRE(many > 6);
  CHECK(files().count("model.safetensors.index.json") == 1);

  fp8rl::model::save_hf_model(folder, params, DType::f32, 2000);  // fewer shards: the rest must go
  const std::set<std::string> fewer = files();
  CHECK(fewer.size() < many);
  const size_t shards = fewer.size() - 3;  // besides config.json, the index and tokenizer.json
  for (const std::string& name : fewer) {
    CAPTURE(name);
    if (name.rfind("model-", 0) == 0) CHECK(name.find("-of-0000" + std::to_string(shards) + ".") != std::string::npos);
  }

  fp8rl::model::save_hf_model(folder, params, DType::bf16);  // unsharded
  CHECK(files() == std::set<std::string>{"config.json", "model.safetensors", "tokenizer.json"});
  CHECK(fp8rl::model::load_hf_model(folder).layers[1].q_bias.data[2] ==
        fp8rl::bf16_round(params.layers[1].q_bias.data[2]));

  fp8rl::model::save_hf_model(folder, params, DType::f32, 2000);  // sharded again: the single file must go
  CHECK(files().count("model.safetensors") == 0);
  CHECK(fp8rl::model::load_hf_model(folder).layers[1].q_bias.data[2] == params.layers[1].q_bias.data[2]);
}

TEST_CASE("hf checkpoint: save rejects what it cannot write") {
  using fp8rl::Status;
  TempDir dir;
  const ModelParams params = test_params(ModelFamily::llama, 1);
  fp8rl::test::expect_error([&] { fp8rl::model::save_hf_model(dir.file("a"), params, DType::i32); },
                            Status::invalid_argument, {"I32"});
  fp8rl::test::expect_error([&] { fp8rl::model::save_hf_model(dir.file("a"), params, DType::f32, 0); },
                            Status::invalid_argument, {"max_shard_bytes"});

  ModelParams big = params;
  big.layers[1].down_proj.data[7] = 65520.0f;  // rounds to F16 infinity
  fp8rl::test::expect_error([&] { fp8rl::model::save_hf_model(dir.file("a"), big, DType::f16); },
                            Status::invalid_argument, {"model.layers.1.mlp.down_proj.weight", "element 7", "F16"});
  CHECK_FALSE(std::filesystem::exists(dir.file("a")));           // nothing written
  fp8rl::model::save_hf_model(dir.file("b"), big, DType::bf16);  // BF16 holds it

  ModelParams nan = params;
  nan.final_norm.data[0] = std::numeric_limits<float>::quiet_NaN();
  fp8rl::test::expect_error([&] { fp8rl::model::save_hf_model(dir.file("a"), nan, DType::f32); }, Status::non_finite,
                            {"model.norm.weight"});

  ModelParams short_layer = params;
  short_layer.layers[0].up_proj.data.pop_back();
  fp8rl::test::expect_error([&] { fp8rl::model::save_hf_model(dir.file("a"), short_layer, DType::f32); },
                            Status::invalid_argument, {"model.layers.0.mlp.up_proj.weight"});
  CHECK_FALSE(std::filesystem::exists(dir.file("a")));
}
