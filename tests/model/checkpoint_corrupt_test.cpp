// load_hf_model on broken folders: each gives its documented Status and a
// message that names the file and the tensor (or shard) at fault.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/model/model_params.h"
#include "model/checkpoint_test_support.h"

namespace {

using fp8rl::Status;
using fp8rl::test::expect_error;
using fp8rl::test::TempDir;
namespace fs = std::filesystem;

constexpr const char* kShard1 = "model-00001-of-00003.safetensors";

// Writes oracle folders (qwen2: it has biases), one per {layout, corruption},
// in one Python run, and returns their paths.
std::vector<std::string> make_folders(const TempDir& dir, const std::vector<std::vector<std::string>>& specs) {
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> folders;
  for (size_t i = 0; i < specs.size(); ++i) {
    folders.push_back(dir.file("m" + std::to_string(i)));
    commands.push_back(
        {"make", folders.back(), dir.file("e" + std::to_string(i)), "qwen2", specs[i][0], "mixed", specs[i][1]});
  }
  REQUIRE(fp8rl::test::run_model_oracle_batch(dir.file("commands.txt"), commands) == 0);
  return folders;
}

std::string make_folder(const TempDir& dir, const std::string& layout, const std::string& corruption = "none") {
  return make_folders(dir, {{layout, corruption}})[0];
}

void expect_load_error(const std::string& folder, Status status, const std::vector<std::string>& fragments) {
  expect_error([&] { fp8rl::model::load_hf_model(folder); }, status, fragments);
}

std::string index_path(const std::string& folder) { return folder + "/model.safetensors.index.json"; }

std::string read_text(const std::string& path) {
  const std::vector<uint8_t> bytes = fp8rl::test::read_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

// Replaces the first occurrence of `from` in the index file.
void edit_index(const std::string& folder, const std::string& from, const std::string& to) {
  std::string text = read_text(index_path(folder));
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  fp8rl::test::write_bytes(index_path(folder), text);
}

}  // namespace

TEST_CASE("hf checkpoint corrupt: a missing tensor names the tensor and the file") {
  TempDir dir;
  const std::string missing = "missing:model.layers.1.self_attn.v_proj.bias";
  const std::vector<std::string> folders = make_folders(dir, {{"single", missing}, {"sharded", missing}});
  expect_load_error(folders[0], Status::corrupt_data,
                    {"model.safetensors", "model.layers.1.self_attn.v_proj.bias", "missing"});
  expect_load_error(folders[1], Status::corrupt_data,
                    {"-of-00003.safetensors", "model.layers.1.self_attn.v_proj.bias", "missing", "index places it"});
}

TEST_CASE("hf checkpoint corrupt: a tensor absent from weight_map names the index") {
  TempDir dir;
  const std::string folder = make_folder(dir, "sharded", "unindexed:model.norm.weight");
  expect_load_error(folder, Status::corrupt_data, {"model.safetensors.index.json", "model.norm.weight"});
}

TEST_CASE("hf checkpoint corrupt: a mis-shaped tensor names both shapes") {
  TempDir dir;
  const std::string folder = make_folder(dir, "single", "shape:model.layers.0.mlp.down_proj.weight");
  expect_load_error(folder, Status::corrupt_data,
                    {"model.safetensors", "model.layers.0.mlp.down_proj.weight", "[25, 36]", "[24, 36]"});
}

TEST_CASE("hf checkpoint corrupt: a weight of another dtype names tensor and dtype") {
  TempDir dir;
  const std::string folder = make_folder(dir, "sharded", "dtype:model.layers.0.self_attn.k_proj.weight:I32");
  expect_load_error(folder, Status::corrupt_data, {"model.layers.0.self_attn.k_proj.weight", "I32", "-of-00003"});
}

TEST_CASE("hf checkpoint corrupt: NaN and infinite weights are non_finite, with the element") {
  TempDir dir;
  const std::vector<std::string> folders = make_folders(dir, {{"single", "nan:model.layers.1.mlp.up_proj.weight"},
                                                              {"sharded", "inf:model.embed_tokens.weight"},
                                                              {"single", "nan:model.layers.0.self_attn.q_proj.bias"}});
  expect_load_error(folders[0], Status::non_finite,
                    {"model.safetensors", "model.layers.1.mlp.up_proj.weight", "element 3", "row 0, column 3", "NaN"});
  expect_load_error(folders[1], Status::non_finite, {"model.embed_tokens.weight", "element 3", "infinite"});
  expect_load_error(folders[2], Status::non_finite, {"model.layers.0.self_attn.q_proj.bias", "element 3", "NaN"});
}

TEST_CASE("hf checkpoint corrupt: the index names a missing shard") {
  TempDir dir;
  const std::string folder = make_folder(dir, "sharded");
  fs::remove(folder + "/model-00002-of-00003.safetensors");
  expect_load_error(folder, Status::corrupt_data,
                    {"model.safetensors.index.json", "model-00002-of-00003.safetensors", "does not exist"});
}

TEST_CASE("hf checkpoint corrupt: shard names that leave the folder are refused") {
  TempDir dir;
  const std::string folder = make_folder(dir, "sharded");
  const std::string pristine = read_text(index_path(folder));
  // The first name points at a real file, so only the name check can stop it.
  fs::copy_file(folder + "/" + kShard1, dir.file(kShard1));
  for (const char* evil : {"../model-00001-of-00003.safetensors", "/etc/passwd", "..", "sub\\\\x.safetensors"}) {
    CAPTURE(evil);
    fp8rl::test::write_bytes(index_path(folder), pristine);
    edit_index(folder, std::string("\"") + kShard1 + "\"", std::string("\"") + evil + "\"");
    expect_load_error(folder, Status::corrupt_data, {"model.safetensors.index.json", "not a plain file name"});
  }
}

TEST_CASE("hf checkpoint corrupt: malformed index JSON") {
  TempDir dir;
  const std::string folder = make_folder(dir, "sharded");
  const std::string pristine = read_text(index_path(folder));
  fp8rl::model::load_hf_model(folder);  // intact, it loads

  edit_index(folder, "\"weight_map\": {", "\"weight_map\": {,");
  expect_load_error(folder, Status::corrupt_data, {"model.safetensors.index.json"});

  fp8rl::test::write_bytes(index_path(folder), pristine);
  edit_index(folder, "\"weight_map\"", "\"weights\"");
  expect_load_error(folder, Status::corrupt_data, {"model.safetensors.index.json", "weight_map"});

  fp8rl::test::write_bytes(index_path(folder), pristine);
  edit_index(folder, std::string("\"") + kShard1 + "\"", "17");
  expect_load_error(folder, Status::corrupt_data, {"model.safetensors.index.json", "not a string"});

  fp8rl::test::write_bytes(index_path(folder), "[1, 2]");
  expect_load_error(folder, Status::corrupt_data, {"model.safetensors.index.json", "not a JSON object"});

  fp8rl::test::write_bytes(index_path(folder), pristine.substr(0, pristine.size() / 2));
  expect_load_error(folder, Status::corrupt_data, {"model.safetensors.index.json"});
}

TEST_CASE("hf checkpoint corrupt: a truncated shard is corrupt_data naming the file") {
  TempDir dir;
  const std::vector<std::string> folders = make_folders(dir, {{"single", "none"}, {"sharded", "none"}});
  for (const std::string& file : {folders[0] + "/model.safetensors", folders[1] + "/" + kShard1}) {
    CAPTURE(file);
    fs::resize_file(file, fs::file_size(file) - 5);
    expect_load_error(fs::path(file).parent_path().string(), Status::corrupt_data,
                      {fs::path(file).filename().string()});
  }
}

TEST_CASE("hf checkpoint corrupt: missing folder, config.json or weights are io_error") {
  TempDir dir;
  expect_load_error(dir.file("nowhere"), Status::io_error, {"nowhere", "no such model folder"});

  const std::string folder = make_folder(dir, "single");
  fs::rename(folder + "/config.json", dir.file("config.json"));
  expect_load_error(folder, Status::io_error, {folder, "config.json"});
  fs::rename(dir.file("config.json"), folder + "/config.json");

  fs::remove(folder + "/model.safetensors");
  expect_load_error(folder, Status::io_error, {folder, "model.safetensors", "model.safetensors.index.json"});

  expect_load_error(folder + "/config.json", Status::io_error, {"not a folder"});
}

TEST_CASE("hf checkpoint corrupt: an unsupported architecture is unsupported") {
  TempDir dir;
  const std::string folder = make_folder(dir, "single");
  std::string config = read_text(folder + "/config.json");
  const size_t at = config.find("\"qwen2\"");
  REQUIRE(at != std::string::npos);
  config.replace(at, 7, "\"gpt2\"");
  fp8rl::test::write_bytes(folder + "/config.json", config);
  expect_load_error(folder, Status::unsupported, {"gpt2"});
}
