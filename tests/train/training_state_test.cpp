// save_training_state / load_training_state: bit-exact round trips, the
// documented file layout (checked with SafetensorsReader and, when
// $FP8RL_PYTHON is set, a plain-Python reader), and one damaged file per
// check that load must make, each built with write_safetensors from the
// content of a good file.
#include "core/train/training_state.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/io/json.h"
#include "core/io/safetensors.h"
#include "core/model/model_params.h"
#include "io/io_test_support.h"
#include "kernels/error.h"
#include "support/expect_error.h"

namespace fp8rl::test {
namespace {

using train::TrainingState;
using Metadata = std::map<std::string, std::string, std::less<>>;

// Tiny configs covering each optional tensor: llama with attention_bias has
// q/k/v/o biases and an untied head, qwen2 has q/k/v biases and a tied head,
// qwen3 has q_norm/k_norm and head_dim * heads != hidden.
model::ModelConfig tiny_config(model::ModelFamily family) {
  model::ModelConfig c;
  c.family = family;
  c.vocab_size = 37;
  c.hidden_size = 16;
  c.num_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.intermediate_size = 24;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 500000.0;
  c.eos_token_ids = {35, 36};
  c.bos_token_id = 1;
  c.torch_dtype = "bfloat16";
  if (family == model::ModelFamily::llama) {
    c.attention_bias = true;
    c.rope_scaling.type = model::RopeScalingType::llama3;
    c.rope_scaling.factor = 8.0;
    c.rope_scaling.original_max_position_embeddings = 16;
  } else if (family == model::ModelFamily::qwen2) {
    c.attention_bias = true;
    c.tie_word_embeddings = true;
  } else {
    c.qk_norm = true;
    c.head_dim = 6;
    c.head_dim_explicit = true;
  }
  return c;
}

std::vector<float> random_values(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<float> values(count);
  for (float& value : values) value = normal(rng);
  return values;
}

// A state with every field away from its default. The moments include -0,
// the smallest subnormal and the largest float, which a lossy copy would alter.
TrainingState make_state(const model::ModelConfig& config, uint64_t seed, bool with_moments = true) {
  TrainingState state;
  model::RandomInitOptions init;
  init.perturb_norms_and_biases = true;
  state.params = model::random_model_params(config, seed, init);
  state.recipe.linear = policy::Precision::fp8;
  state.recipe.scale_format = ScaleFormat::pow2;
  state.recipe.kv_cache = policy::Precision::fp8;
  state.recipe.attention = policy::Precision::fp8;
  state.recipe.bf16_first_layers = 1;
  state.recipe.bf16_last_layers = 2;
  state.recipe.head = policy::Precision::fp8;
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> positive(0.01f, 4.0f);
  for (std::vector<float>* scales : {&state.scales.q, &state.scales.k, &state.scales.v}) {
    for (int64_t layer = 0; layer < config.num_layers; ++layer) scales->push_back(positive(rng));
  }
  if (with_moments) {
    model::for_each_tensor(state.params, [&](const std::string&, const std::vector<int64_t>&, model::HostTensor& t) {
      state.exp_avg.push_back(random_values(t.data.size(), rng));
      std::vector<float> second = random_values(t.data.size(), rng);
      for (float& value : second) value = value * value;
      state.exp_avg_sq.push_back(std::move(second));
    });
    state.exp_avg[0][0] = -0.0f;
    state.exp_avg[0][1] = std::numeric_limits<float>::denorm_min();
    state.exp_avg_sq[0][0] = std::numeric_limits<float>::max();
  }
  state.steps = 123456789012345;
  state.optimizer_steps = 987654321;
  state.rng_seed = 0xfedcba9876543210ull;  // above INT64_MAX: must survive as unsigned
  state.rng_counter = 42;
  return state;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void check_same_moments(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(a[i], b[i]));
  }
}

// Field by field, floats bitwise; the config through its JSON text, which
// holds every field.
void check_same_state(const TrainingState& a, const TrainingState& b) {
  CHECK(io::write_json(model::model_config_to_json(a.params.config)) ==
        io::write_json(model::model_config_to_json(b.params.config)));
  auto& pa = const_cast<model::ModelParams&>(a.params);
  auto& pb = const_cast<model::ModelParams&>(b.params);
  std::vector<std::pair<std::string, const model::HostTensor*>> tensors_b;
  model::for_each_tensor(pb, [&](const std::string& name, const std::vector<int64_t>&, model::HostTensor& t) {
    tensors_b.emplace_back(name, &t);
  });
  size_t index = 0;
  model::for_each_tensor(pa, [&](const std::string& name, const std::vector<int64_t>&, model::HostTensor& t) {
    CAPTURE(name);
    REQUIRE(index < tensors_b.size());
    CHECK(t.shape == tensors_b[index].second->shape);
    CHECK(same_bits(t.data, tensors_b[index].second->data));
    ++index;
  });
  CHECK(index == tensors_b.size());
  CHECK(a.recipe == b.recipe);
  CHECK(same_bits(a.scales.q, b.scales.q));
  CHECK(same_bits(a.scales.k, b.scales.k));
  CHECK(same_bits(a.scales.v, b.scales.v));
  check_same_moments(a.exp_avg, b.exp_avg);
  check_same_moments(a.exp_avg_sq, b.exp_avg_sq);
  CHECK(a.steps == b.steps);
  CHECK(a.optimizer_steps == b.optimizer_steps);
  CHECK(a.rng_seed == b.rng_seed);
  CHECK(a.rng_counter == b.rng_counter);
}

// A checkpoint's content held in memory, to be damaged and written back with
// write_safetensors.
struct StoredTensor {
  std::string name;
  io::DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  std::vector<float> floats() const {
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
    return values;
  }
  void set_floats(const std::vector<float>& values) {
    bytes.resize(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
  }
};

struct StoredFile {
  std::vector<StoredTensor> tensors;
  Metadata metadata;

  static StoredFile read(const std::string& path) {
    const io::SafetensorsReader reader(path);
    StoredFile file;
    file.metadata = reader.metadata();
    for (const io::SafetensorsTensor& t : reader.tensors()) {
      file.tensors.push_back({t.name, t.dtype, t.shape, reader.read(t)});
    }
    return file;
  }

  void write(const std::string& path) const {
    std::vector<io::SafetensorsTensorData> data;
    for (const StoredTensor& t : tensors) data.push_back({t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size()});
    io::write_safetensors(path, std::move(data), metadata);
  }

  StoredTensor& tensor(const std::string& name) {
    const auto found =
        std::find_if(tensors.begin(), tensors.end(), [&](const StoredTensor& t) { return t.name == name; });
    REQUIRE_MESSAGE(found != tensors.end(), "no tensor " << name);
    return *found;
  }

  void erase(const std::string& name) {
    const size_t before = tensors.size();
    tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [&](const StoredTensor& t) { return t.name == name; }),
                  tensors.end());
    REQUIRE(tensors.size() + 1 == before);
  }
};

// A good file for a tiny llama state, and a damaged copy that load must reject.
class CorruptionFixture {
 public:
  CorruptionFixture() : good_(make_state(tiny_config(model::ModelFamily::llama), 5)) {
    train::save_training_state(dir_.file("good.safetensors"), good_);
  }

  // Applies damage to a copy of the good file's content, writes it and
  // expects load to fail with status and a message naming the file and fragments.
  void expect(const std::function<void(StoredFile&)>& damage, Status status, std::vector<std::string> fragments) {
    StoredFile file = StoredFile::read(dir_.file("good.safetensors"));
    damage(file);
    const std::string path = dir_.file("bad.safetensors");
    file.write(path);
    fragments.push_back(path);
    expect_error([&] { train::load_training_state(path); }, status, fragments);
  }

  void expect_metadata(const std::string& key, const std::string& value, Status status,
                       std::vector<std::string> fragments) {
    CAPTURE(key);
    CAPTURE(value);
    expect([&](StoredFile& file) { file.metadata[key] = value; }, status, std::move(fragments));
  }

  // The damage must be what load rejects: the same content undamaged loads.
  void expect_loads(const std::function<void(StoredFile&)>& change) {
    StoredFile file = StoredFile::read(dir_.file("good.safetensors"));
    change(file);
    const std::string path = dir_.file("changed.safetensors");
    file.write(path);
    CHECK_NOTHROW(train::load_training_state(path));
  }

  const TempDir& dir() const { return dir_; }
  const TrainingState& good() const { return good_; }

 private:
  TempDir dir_;
  TrainingState good_;
};

TEST_CASE("training state: round trip is bit exact for each model family") {
  const TempDir dir;
  for (const model::ModelFamily family :
       {model::ModelFamily::llama, model::ModelFamily::qwen2, model::ModelFamily::qwen3}) {
    CAPTURE(model::model_type_name(family));
    const TrainingState state = make_state(tiny_config(family), 3 + static_cast<uint64_t>(family));
    const std::string path = dir.file(std::string(model::model_type_name(family)) + ".safetensors");
    train::save_training_state(path, state);
    const TrainingState loaded = train::load_training_state(path);
    check_same_state(state, loaded);
    // A second save of the loaded state writes the same bytes: nothing was lost or reordered.
    train::save_training_state(path + ".again", loaded);
    CHECK(read_bytes(path) == read_bytes(path + ".again"));
  }
}

TEST_CASE("training state: default recipe, no moments yet, extreme counters") {
  const TempDir dir;
  TrainingState state = make_state(tiny_config(model::ModelFamily::qwen3), 9, /*with_moments=*/false);
  state.recipe = policy::Recipe{};
  state.steps = std::numeric_limits<int64_t>::max();
  state.optimizer_steps = 0;
  state.rng_seed = std::numeric_limits<uint64_t>::max();
  state.rng_counter = 0;
  const std::string path = dir.file("fresh.safetensors");
  train::save_training_state(path, state);
  const io::SafetensorsReader reader(path);
  for (const io::SafetensorsTensor& t : reader.tensors()) CHECK(t.name.rfind("optimizer.", 0) == std::string::npos);
  const TrainingState loaded = train::load_training_state(path);
  CHECK(loaded.exp_avg.empty());
  CHECK(loaded.exp_avg_sq.empty());
  check_same_state(state, loaded);
}

TEST_CASE("training state: the file holds the documented tensors and metadata") {
  const TempDir dir;
  const model::ModelConfig config = tiny_config(model::ModelFamily::qwen3);
  const TrainingState state = make_state(config, 4);
  const std::string path = dir.file("state.safetensors");
  train::save_training_state(path, state);
  const io::SafetensorsReader reader(path);

  // Names and shapes written out by hand from the Hugging Face layout of a
  // Qwen3 model (hidden 16, q_dim 4*6 = 24, kv_dim 2*6 = 12, intermediate 24).
  std::map<std::string, std::vector<int64_t>> weights = {
      {"model.embed_tokens.weight", {37, 16}}, {"model.norm.weight", {16}}, {"lm_head.weight", {37, 16}}};
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    weights[p + "input_layernorm.weight"] = {16};
    weights[p + "post_attention_layernorm.weight"] = {16};
    weights[p + "self_attn.q_proj.weight"] = {24, 16};
    weights[p + "self_attn.k_proj.weight"] = {12, 16};
    weights[p + "self_attn.v_proj.weight"] = {12, 16};
    weights[p + "self_attn.o_proj.weight"] = {16, 24};
    weights[p + "self_attn.q_norm.weight"] = {6};
    weights[p + "self_attn.k_norm.weight"] = {6};
    weights[p + "mlp.gate_proj.weight"] = {24, 16};
    weights[p + "mlp.up_proj.weight"] = {24, 16};
    weights[p + "mlp.down_proj.weight"] = {16, 24};
  }
  std::map<std::string, std::vector<int64_t>> expected = weights;
  for (const auto& [name, shape] : weights) {
    expected["optimizer.exp_avg." + name] = shape;
    expected["optimizer.exp_avg_sq." + name] = shape;
  }
  for (const char* name : {"attention_scales.q", "attention_scales.k", "attention_scales.v"}) expected[name] = {2};

  std::map<std::string, std::vector<int64_t>> actual;
  for (const io::SafetensorsTensor& t : reader.tensors()) {
    CAPTURE(t.name);
    CHECK(t.dtype == io::DType::f32);
    actual[t.name] = t.shape;
  }
  CHECK(actual == expected);

  // Values are stored as given: spot-check one weight, one moment and the scales.
  const auto stored = [&](const std::string& name) {
    const io::SafetensorsTensor& t = reader.tensor(name);
    std::vector<float> values(t.size_bytes / sizeof(float));
    reader.read(t, 0, values.data(), t.size_bytes);
    return values;
  };
  CHECK(same_bits(stored("model.embed_tokens.weight"), state.params.embed_tokens.data));
  CHECK(same_bits(stored("optimizer.exp_avg_sq.model.embed_tokens.weight"), state.exp_avg_sq[0]));
  CHECK(same_bits(stored("model.layers.1.self_attn.k_norm.weight"), state.params.layers[1].k_norm.data));
  CHECK(same_bits(stored("attention_scales.q"), state.scales.q));
  CHECK(same_bits(stored("attention_scales.k"), state.scales.k));
  CHECK(same_bits(stored("attention_scales.v"), state.scales.v));

  const Metadata& meta = reader.metadata();
  std::vector<std::string> keys;
  for (const auto& entry : meta) keys.push_back(entry.first);
  CHECK(keys == std::vector<std::string>{"config", "format", "format_version", "optimizer_steps", "recipe",
                                         "rng_counter", "rng_seed", "steps"});
  CHECK(meta.at("format") == "fp8rl.training_state");
  CHECK(meta.at("format_version") == "2");
  CHECK(meta.at("steps") == "123456789012345");
  CHECK(meta.at("optimizer_steps") == "987654321");
  CHECK(meta.at("rng_seed") == "18364758544493064720");
  CHECK(meta.at("rng_counter") == "42");
  const io::Json recipe = io::parse_json(meta.at("recipe"));
  CHECK(recipe.at("linear").as_string() == "fp8");
  CHECK(recipe.at("scale_format").as_string() == "pow2");
  CHECK(recipe.at("kv_cache").as_string() == "fp8");
  CHECK(recipe.at("attention").as_string() == "fp8");
  CHECK(recipe.at("bf16_first_layers").as_int64() == 1);
  CHECK(recipe.at("bf16_last_layers").as_int64() == 2);
  CHECK(recipe.at("head").as_string() == "fp8");
  const io::Json json_config = io::parse_json(meta.at("config"));
  CHECK(json_config.at("model_type").as_string() == "qwen3");
  CHECK(json_config.at("head_dim").as_int64() == 6);
  CHECK(json_config.at("num_hidden_layers").as_int64() == 2);
}

// A reader that shares no code with the library: Python's json and struct.
constexpr const char* kPythonCheck = R"PY(
import json, struct, sys
path, scale_q0_bits = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
assert (8 + n) % 8 == 0, "data area not 8-aligned"
header = json.loads(data[8:8 + n])
meta = header.pop("__metadata__")
assert meta["format"] == "fp8rl.training_state" and meta["format_version"] == "2", meta
assert json.loads(meta["config"])["model_type"] == "llama"
end = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    assert t["dtype"] == "F32", name
    begin, stop = t["data_offsets"]
    count = 1
    for d in t["shape"]:
        count *= d
    assert begin == end and stop - begin == 4 * count, name
    end = stop
    if name.startswith("optimizer.exp_avg"):
        weight = name.split(".", 2)[2]
        assert header[weight]["shape"] == t["shape"], name
assert 8 + n + end == len(data), "trailing or missing bytes"
begin, _ = header["attention_scales.q"]["data_offsets"]
(q0_bits,) = struct.unpack_from("<I", data, 8 + n + begin)
assert q0_bits == scale_q0_bits, (q0_bits, scale_q0_bits)
print("python check ok")
)PY";

TEST_CASE("training state: a plain-Python reader accepts the file") {
  const char* python = std::getenv("FP8RL_PYTHON");
  if (python == nullptr || *python == '\0') {
    MESSAGE("FP8RL_PYTHON not set: skipping the Python check");
    return;
  }
  const TempDir dir;
  const TrainingState state = make_state(tiny_config(model::ModelFamily::llama), 6);
  train::save_training_state(dir.file("state.safetensors"), state);
  write_bytes(dir.file("check.py"), kPythonCheck);
  uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &state.scales.q[0], sizeof scale_bits);
  const std::string command = std::string(python) + " '" + dir.file("check.py") + "' '" +
                              dir.file("state.safetensors") + "' " + std::to_string(scale_bits);
  CHECK(std::system(command.c_str()) == 0);
}

TEST_CASE("training state: unreadable or truncated files") {
  const TempDir dir;
  const std::string missing = dir.file("missing.safetensors");
  expect_error([&] { train::load_training_state(missing); }, Status::io_error, {missing});

  const std::string path = dir.file("state.safetensors");
  train::save_training_state(path, make_state(tiny_config(model::ModelFamily::qwen2), 2));
  const std::vector<uint8_t> bytes = read_bytes(path);
  for (const size_t keep : {size_t{0}, size_t{5}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    CAPTURE(keep);
    const std::string cut = dir.file("cut.safetensors");
    write_bytes(cut, std::string(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)));
    expect_error([&] { train::load_training_state(cut); }, Status::corrupt_data, {cut});
  }
}

TEST_CASE("training state: damaged metadata is corrupt_data naming the key") {
  CorruptionFixture fixture;
  const std::vector<std::string> keys = {"format", "format_version",  "config",   "recipe",
                                         "steps",  "optimizer_steps", "rng_seed", "rng_counter"};
  for (const std::string& key : keys) {
    CAPTURE(key);
    fixture.expect([&](StoredFile& file) { file.metadata.erase(key); }, Status::corrupt_data, {"missing", key});
  }
  fixture.expect_metadata("format", "safetensors", Status::corrupt_data, {"format"});
  fixture.expect_metadata("format_version", "3", Status::corrupt_data, {"format_version", "3"});
  fixture.expect_metadata("format_version", "1.0", Status::corrupt_data, {"format_version"});

  for (const char* key : {"steps", "optimizer_steps", "rng_seed", "rng_counter"}) {
    for (const char* text : {"", "-1", "+1", " 1", "1 ", "1.0", "0x10", "12a", "1e3"}) {
      fixture.expect_metadata(key, text, Status::corrupt_data, {key});
    }
  }
  // The limits of each type are accepted, one past them rejected.
  fixture.expect_metadata("steps", "9223372036854775808", Status::corrupt_data, {"steps"});
  fixture.expect_metadata("optimizer_steps", "99999999999999999999", Status::corrupt_data, {"optimizer_steps"});
  fixture.expect_metadata("rng_seed", "18446744073709551616", Status::corrupt_data, {"rng_seed"});
  fixture.expect_metadata("rng_counter", "184467440737095516150", Status::corrupt_data, {"rng_counter"});
  fixture.expect_loads([](StoredFile& file) {
    file.metadata["steps"] = "9223372036854775807";
    file.metadata["rng_seed"] = "18446744073709551615";
  });
}

TEST_CASE("training state: malformed config or recipe is corrupt_data") {
  CorruptionFixture fixture;
  fixture.expect_metadata("config", "{", Status::corrupt_data, {"config"});
  fixture.expect_metadata("config", "[]", Status::corrupt_data, {"config"});
  fixture.expect_metadata("config", "{}", Status::corrupt_data, {"config", "model_type"});
  // A valid config of another model: the tensors no longer match it.
  model::ModelConfig other = tiny_config(model::ModelFamily::llama);
  other.intermediate_size = 20;
  fixture.expect_metadata("config", io::write_json(model::model_config_to_json(other)), Status::corrupt_data,
                          {"model.layers.0.mlp.gate_proj.weight", "shape"});
  // Tied embeddings: lm_head.weight becomes a tensor the state does not claim.
  other = tiny_config(model::ModelFamily::llama);
  other.tie_word_embeddings = true;
  fixture.expect_metadata("config", io::write_json(model::model_config_to_json(other)), Status::corrupt_data,
                          {"unexpected tensor", "lm_head.weight"});

  const std::string good = R"("linear":"fp8","scale_format":"pow2","kv_cache":"fp8","attention":"fp8",)"
                           R"("head":"fp8","bf16_first_layers":1)";
  fixture.expect_loads([&](StoredFile& file) { file.metadata["recipe"] = "{" + good + R"(,"bf16_last_layers":0})"; });
  fixture.expect_metadata("recipe", "{" + good, Status::corrupt_data, {"recipe"});
  fixture.expect_metadata("recipe", "[]", Status::corrupt_data, {"recipe"});
  fixture.expect_metadata("recipe", "{" + good + "}", Status::corrupt_data, {"recipe", "bf16_last_layers"});
  fixture.expect_metadata("recipe", "{" + good + R"(,"bf16_last_layers":0,"extra":1})", Status::corrupt_data,
                          {"recipe", "extra"});
  fixture.expect_metadata("recipe", "{" + good + R"(,"bf16_last_layers":-1})", Status::corrupt_data,
                          {"recipe", "bf16_last_layers"});
  fixture.expect_metadata("recipe", "{" + good + R"(,"bf16_last_layers":1.5})", Status::corrupt_data,
                          {"recipe", "bf16_last_layers"});
  fixture.expect_metadata("recipe",
                          R"({"linear":"fp16","scale_format":"fp32","kv_cache":"bf16","attention":"bf16",)"
                          R"("head":"bf16","bf16_first_layers":0,"bf16_last_layers":0})",
                          Status::corrupt_data, {"recipe", "linear", "fp16"});
  fixture.expect_metadata("recipe",
                          R"({"linear":"bf16","scale_format":"e8m0","kv_cache":"bf16","attention":"bf16",)"
                          R"("head":"bf16","bf16_first_layers":0,"bf16_last_layers":0})",
                          Status::corrupt_data, {"recipe", "scale_format", "e8m0"});
  fixture.expect_metadata("recipe", R"({"linear":"bf16","scale_format":"fp32","kv_cache":"bf16","attention":"bf16",)"
                                    R"("head":"fp4","bf16_first_layers":0,"bf16_last_layers":0})",
                          Status::corrupt_data, {"recipe", "head", "fp4"});
  fixture.expect_metadata("recipe", R"({"linear":"bf16","scale_format":"fp32","kv_cache":"bf16","attention":"bf16",)"
                                    R"("bf16_first_layers":0,"bf16_last_layers":0})",
                          Status::corrupt_data, {"recipe", "missing", "head"});
  // Each value valid, the combination not: FP8 attention needs the FP8 KV cache.
  fixture.expect_metadata("recipe",
                          R"({"linear":"bf16","scale_format":"fp32","kv_cache":"bf16","attention":"fp8",)"
                          R"("head":"bf16","bf16_first_layers":0,"bf16_last_layers":0})",
                          Status::corrupt_data, {"recipe", "KV cache"});
}

TEST_CASE("training state: missing, mistyped or non-finite tensors") {
  CorruptionFixture fixture;
  const std::string weight = "model.layers.1.self_attn.o_proj.bias";
  fixture.expect([&](StoredFile& file) { file.erase(weight); }, Status::corrupt_data, {"missing", weight});
  fixture.expect([](StoredFile& file) { file.erase("model.norm.weight"); }, Status::corrupt_data,
                 {"missing", "model.norm.weight"});
  fixture.expect(
      [](StoredFile& file) {
        StoredTensor& t = file.tensor("model.embed_tokens.weight");
        t.dtype = io::DType::bf16;
        t.bytes.resize(t.bytes.size() / 2);
      },
      Status::corrupt_data, {"model.embed_tokens.weight", "BF16"});
  fixture.expect(
      [](StoredFile& file) {
        std::swap(file.tensor("lm_head.weight").shape[0], file.tensor("lm_head.weight").shape[1]);
      },
      Status::corrupt_data, {"lm_head.weight", "shape"});
  fixture.expect([](StoredFile& file) { file.tensor("optimizer.exp_avg.lm_head.weight").shape = {37 * 16}; },
                 Status::corrupt_data, {"optimizer.exp_avg.lm_head.weight", "shape"});
  fixture.expect(
      [](StoredFile& file) {
        StoredTensor& t = file.tensor("model.layers.0.mlp.up_proj.weight");
        std::vector<float> values = t.floats();
        values[17] = std::numeric_limits<float>::infinity();
        t.set_floats(values);
      },
      Status::non_finite, {"model.layers.0.mlp.up_proj.weight", "element 17"});
  fixture.expect(
      [](StoredFile& file) {
        StoredTensor& t = file.tensor("optimizer.exp_avg_sq.model.layers.1.self_attn.q_proj.bias");
        std::vector<float> values = t.floats();
        values[3] = std::nanf("");
        t.set_floats(values);
      },
      Status::non_finite, {"optimizer.exp_avg_sq.model.layers.1.self_attn.q_proj.bias", "NaN"});
  fixture.expect(
      [](StoredFile& file) {
        file.tensors.push_back({"extra", io::DType::f32, {1}, {0, 0, 0, 0}});
      },
      Status::corrupt_data, {"unexpected tensor", "extra"});
}

TEST_CASE("training state: the optimizer moments are all present or all absent") {
  CorruptionFixture fixture;
  const std::string one = "optimizer.exp_avg.model.layers.0.self_attn.k_proj.weight";
  fixture.expect([&](StoredFile& file) { file.erase(one); }, Status::corrupt_data, {"partial optimizer state", one});
  const auto erase_prefix = [](StoredFile& file, const std::string& prefix) {
    std::vector<std::string> names;
    for (const StoredTensor& t : file.tensors) {
      if (t.name.rfind(prefix, 0) == 0) names.push_back(t.name);
    }
    REQUIRE(!names.empty());
    for (const std::string& name : names) file.erase(name);
  };
  fixture.expect([&](StoredFile& file) { erase_prefix(file, "optimizer.exp_avg_sq."); }, Status::corrupt_data,
                 {"partial optimizer state", "optimizer.exp_avg_sq.model.embed_tokens.weight"});
  // Removing both sets is a valid state from before the first step.
  fixture.expect_loads([&](StoredFile& file) { erase_prefix(file, "optimizer."); });
}

TEST_CASE("training state: attention scales must be one positive finite value per layer") {
  CorruptionFixture fixture;
  const auto set_scales = [](const char* name, std::vector<float> values) {
    return [name, values](StoredFile& file) {
      StoredTensor& t = file.tensor(name);
      t.set_floats(values);
      t.shape = {static_cast<int64_t>(values.size())};
    };
  };
  fixture.expect(set_scales("attention_scales.k", {1.0f, 1.0f, 1.0f}), Status::corrupt_data,
                 {"attention_scales.k", "shape"});
  fixture.expect(set_scales("attention_scales.q", {1.0f}), Status::corrupt_data, {"attention_scales.q", "shape"});
  fixture.expect([](StoredFile& file) { file.erase("attention_scales.v"); }, Status::corrupt_data,
                 {"missing", "attention_scales.v"});
  fixture.expect(set_scales("attention_scales.v", {1.0f, 0.0f}), Status::invalid_argument,
                 {"attention_scales.v", "layer 1"});
  fixture.expect(set_scales("attention_scales.q", {-2.0f, 1.0f}), Status::invalid_argument,
                 {"attention_scales.q", "layer 0"});
  fixture.expect(set_scales("attention_scales.k", {1.0f, std::nanf("")}), Status::non_finite,
                 {"attention_scales.k", "NaN"});
  fixture.expect(set_scales("attention_scales.k", {std::numeric_limits<float>::infinity(), 1.0f}), Status::non_finite,
                 {"attention_scales.k", "infinite"});
}

TEST_CASE("training state: save rejects a state it could not load back, leaving the file as it was") {
  const TempDir dir;
  const std::string path = dir.file("state.safetensors");
  const TrainingState good = make_state(tiny_config(model::ModelFamily::qwen2), 8);
  train::save_training_state(path, good);
  const std::vector<uint8_t> before = read_bytes(path);

  const auto expect_rejected = [&](const std::function<void(TrainingState&)>& change, Status status,
                                   const std::vector<std::string>& fragments) {
    TrainingState state = good;
    change(state);
    expect_error([&] { train::save_training_state(path, state); }, status, fragments);
    CHECK(read_bytes(path) == before);
  };
  expect_rejected([](TrainingState& s) { s.exp_avg.pop_back(); }, Status::invalid_argument, {"exp_avg", path});
  expect_rejected([](TrainingState& s) { s.exp_avg_sq[3].push_back(0.0f); }, Status::invalid_argument,
                  {"exp_avg_sq", path});
  expect_rejected([](TrainingState& s) { s.exp_avg_sq.clear(); }, Status::invalid_argument, {"exp_avg_sq", path});
  expect_rejected([](TrainingState& s) { s.exp_avg[2][0] = std::nanf(""); }, Status::non_finite, {"exp_avg", path});
  expect_rejected([](TrainingState& s) { s.scales.k.pop_back(); }, Status::invalid_argument,
                  {"attention_scales.k", path});
  expect_rejected([](TrainingState& s) { s.scales.v[1] = 0.0f; }, Status::invalid_argument,
                  {"attention_scales.v", "layer 1"});
  expect_rejected([](TrainingState& s) { s.steps = -1; }, Status::invalid_argument, {"steps"});
  expect_rejected([](TrainingState& s) { s.params.final_norm.data[0] = std::nanf(""); }, Status::non_finite,
                  {"model.norm.weight"});
  expect_rejected([](TrainingState& s) { s.recipe.kv_cache = policy::Precision::bf16; }, Status::invalid_argument,
                  {"KV cache"});

  const std::string no_folder = dir.file("no/such/folder/state.safetensors");
  expect_error([&] { train::save_training_state(no_folder, good); }, Status::io_error, {no_folder});
}

}  // namespace

// Version 1 (before the recipe's head) stays readable: its recipes have no
// "head" and mean a BF16 one; a "head" in a version-1 file is unknown.
TEST_CASE("training state: format version 1 loads with a BF16 head") {
  const TempDir dir;
  TrainingState state = make_state(tiny_config(model::ModelFamily::llama), 5);
  const std::string path = dir.file("v1.safetensors");
  train::save_training_state(path, state);
  StoredFile file = StoredFile::read(path);
  file.metadata["format_version"] = "1";
  file.metadata["recipe"] = R"({"linear":"fp8","scale_format":"pow2","kv_cache":"fp8","attention":"fp8",)"
                            R"("bf16_first_layers":1,"bf16_last_layers":2})";
  file.write(path);
  const TrainingState loaded = train::load_training_state(path);
  state.recipe.head = policy::Precision::bf16;
  CHECK(loaded.recipe == state.recipe);
  CHECK(same_bits(loaded.params.embed_tokens.data, state.params.embed_tokens.data));

  file.metadata["recipe"] = R"({"linear":"fp8","scale_format":"pow2","kv_cache":"fp8","attention":"fp8",)"
                            R"("head":"bf16","bf16_first_layers":1,"bf16_last_layers":2})";
  file.write(path);
  expect_error([&] { train::load_training_state(path); }, Status::corrupt_data, {"recipe", "unknown key", "head"});
}

}  // namespace fp8rl::test
