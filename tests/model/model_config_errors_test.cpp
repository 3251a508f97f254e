// Every rejection: validate() on configs built in code (invalid_argument),
// bad config.json files (corrupt_data naming the file and key), features this
// library does not implement (unsupported) and unreadable files (io_error).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/io/json.h"
#include "core/model/model_config.h"
#include "io/io_test_support.h"
#include "kernels/error.h"
#include "model/real_configs.h"

namespace {

using fp8rl::Error;
using fp8rl::Status;
using fp8rl::model::ModelConfig;
using fp8rl::model::ModelFamily;

// A valid config built in code: SmolLM2-135M's shape.
ModelConfig smol() {
  ModelConfig c;
  c.family = ModelFamily::llama;
  c.vocab_size = 49152;
  c.hidden_size = 576;
  c.num_layers = 30;
  c.num_attention_heads = 9;
  c.num_key_value_heads = 3;
  c.head_dim = 64;
  c.intermediate_size = 1536;
  c.max_position_embeddings = 8192;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 100000.0;
  return c;
}

struct Failure {
  Status status = Status::ok;
  std::string message;
};

template <typename Action>
Failure failure_of(Action action) {
  try {
    action();
  } catch (const Error& error) {
    return {error.status(), error.what()};
  }
  return {};
}

// validate() must reject `config` with `status` and a message containing `needle`.
void check_invalid(const ModelConfig& config, Status status, const std::string& needle) {
  const Failure f = failure_of([&] { fp8rl::model::validate(config); });
  CHECK_MESSAGE(f.status == status, f.message);
  CHECK_MESSAGE(f.message.find(needle) != std::string::npos, f.message);
}

// Replaces the first `from` in SmolLM2's config.json by `to`.
std::string smol_json_with(const std::string& from, const std::string& to) {
  std::string text = fp8rl::test::kSmolLM2_135M;
  const size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  return text.replace(at, from.size(), to);
}

// Parsing `text` must fail with `status` and a message naming the source and `needle`.
void check_rejected(const std::string& text, Status status, const std::string& needle) {
  const Failure f =
      failure_of([&] { fp8rl::model::parse_model_config(fp8rl::io::parse_json(text), "models/smol/config.json"); });
  CHECK_MESSAGE(f.status == status, f.message);
  CHECK_MESSAGE(f.message.find("models/smol/config.json") != std::string::npos, f.message);
  CHECK_MESSAGE(f.message.find(needle) != std::string::npos, f.message);
}

}  // namespace

TEST_CASE("model config: the base config is valid") { CHECK_NOTHROW(fp8rl::model::validate(smol())); }

TEST_CASE("model config: validate rejects non-positive sizes, naming the field") {
  const struct {
    int64_t ModelConfig::*field;
    const char* name;
  } fields[] = {
      {&ModelConfig::vocab_size, "vocab_size"},
      {&ModelConfig::hidden_size, "hidden_size"},
      {&ModelConfig::num_layers, "num_hidden_layers"},
      {&ModelConfig::num_attention_heads, "num_attention_heads"},
      {&ModelConfig::num_key_value_heads, "num_key_value_heads"},
      {&ModelConfig::head_dim, "head_dim"},
      {&ModelConfig::intermediate_size, "intermediate_size"},
      {&ModelConfig::max_position_embeddings, "max_position_embeddings"},
  };
  for (const auto& f : fields) {
    for (const int64_t bad : {int64_t{0}, int64_t{-1}}) {
      ModelConfig c = smol();
      c.*f.field = bad;
      check_invalid(c, Status::invalid_argument, std::string(f.name) + " must be positive");
    }
  }
}

TEST_CASE("model config: validate rejects inconsistent heads") {
  ModelConfig c = smol();
  c.num_key_value_heads = 2;  // 9 % 2 != 0
  check_invalid(c, Status::invalid_argument, "num_attention_heads (9) is not a multiple of num_key_value_heads (2)");

  c = smol();
  c.head_dim = 32;  // implied head_dim must give heads * head_dim == hidden
  check_invalid(c, Status::invalid_argument, "hidden_size (576) != num_attention_heads (9) * head_dim (32)");
  c.head_dim_explicit = true;  // as Qwen3 writes it: then any width is fine
  CHECK_NOTHROW(fp8rl::model::validate(c));
}

TEST_CASE("model config: validate rejects bad eps, theta and rope scaling") {
  for (const double bad :
       {0.0, -1e-6, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    ModelConfig c = smol();
    c.rms_norm_eps = bad;
    check_invalid(c, Status::invalid_argument, "rms_norm_eps must be positive and finite");
    c = smol();
    c.rope_theta = bad;
    check_invalid(c, Status::invalid_argument, "rope_theta must be positive and finite");
  }
  ModelConfig c = smol();
  c.rms_norm_eps = 1e-7;
  CHECK_NOTHROW(fp8rl::model::validate(c));
  c.rms_norm_eps = -1e-7;  // printed exactly, not as -0.000000
  check_invalid(c, Status::invalid_argument, "got -9.9999999999999995e-08");

  c = smol();
  c.rope_scaling = {fp8rl::model::RopeScalingType::llama3, 32.0, 1.0, 4.0, 8192};
  CHECK_NOTHROW(fp8rl::model::validate(c));
  c.rope_scaling.factor = 0.0;
  check_invalid(c, Status::invalid_argument, "rope_scaling.factor must be positive");
  c.rope_scaling = {fp8rl::model::RopeScalingType::llama3, 32.0, 4.0, 4.0, 8192};
  check_invalid(c, Status::invalid_argument, "rope_scaling.high_freq_factor must exceed low_freq_factor");
  c.rope_scaling = {fp8rl::model::RopeScalingType::llama3, 32.0, 1.0, 4.0, 0};
  check_invalid(c, Status::invalid_argument, "rope_scaling.original_max_position_embeddings must be positive");
  c.rope_scaling.type = static_cast<fp8rl::model::RopeScalingType>(7);
  check_invalid(c, Status::unsupported, "unknown rope_scaling type");
}

TEST_CASE("model config: validate rejects a family mismatch and token ids outside the vocabulary") {
  ModelConfig c = smol();
  c.family = static_cast<ModelFamily>(9);
  check_invalid(c, Status::unsupported, "supported: llama, qwen2, qwen3");
  c = smol();
  c.family = ModelFamily::qwen2;
  check_invalid(c, Status::invalid_argument, "attention_bias must be true for qwen2");
  c = smol();
  c.family = ModelFamily::qwen3;
  check_invalid(c, Status::invalid_argument, "qk_norm must be true for qwen3");
  c = smol();
  c.qk_norm = true;
  check_invalid(c, Status::invalid_argument, "qk_norm must be false for llama");
  c = smol();
  c.eos_token_ids = {0, 49152};
  check_invalid(c, Status::invalid_argument, "eos_token_id 49152 is outside the vocabulary [0, 49152)");
  c = smol();
  c.bos_token_id = -1;
  check_invalid(c, Status::invalid_argument, "bos_token_id -1 is outside the vocabulary");
}

TEST_CASE("model config: sizes above the documented limits are refused, naming field and limit") {
  ModelConfig c = smol();
  c.vocab_size = int64_t{1} << 40;
  c.hidden_size = int64_t{1} << 30;  // vocab * hidden = 2^70 would overflow
  c.head_dim_explicit = true;
  check_invalid(c, Status::invalid_argument, "vocab_size is 1099511627776, above this library's limit of 16777216");
  const Failure f = failure_of([&] { fp8rl::model::parameter_count(c); });
  CHECK(f.status == Status::invalid_argument);

  c = smol();
  c.num_layers = std::numeric_limits<int64_t>::max();
  check_invalid(c, Status::invalid_argument, "num_hidden_layers is 9223372036854775807, above this library's limit");
  c = smol();
  c.num_attention_heads = int64_t{1} << 40;
  c.num_key_value_heads = int64_t{1} << 40;
  c.head_dim = int64_t{1} << 40;  // q_dim alone would overflow
  check_invalid(c, Status::invalid_argument, "num_attention_heads is 1099511627776, above this library's limit of 1024");

  // At every limit at once the count still fits int64 (hand-computed bound: < 2^51).
  c = smol();
  c.vocab_size = fp8rl::model::ModelConfigLimits::max_vocab_size;
  c.hidden_size = fp8rl::model::ModelConfigLimits::max_hidden_size;
  c.num_layers = fp8rl::model::ModelConfigLimits::max_layers;
  c.num_attention_heads = c.num_key_value_heads = fp8rl::model::ModelConfigLimits::max_heads;
  c.head_dim = fp8rl::model::ModelConfigLimits::max_head_dim;
  c.head_dim_explicit = true;
  c.intermediate_size = fp8rl::model::ModelConfigLimits::max_intermediate_size;
  const int64_t count = fp8rl::model::parameter_count(c);
  CHECK(count > 0);
  CHECK(count < (int64_t{1} << 51));
}

TEST_CASE("model config: an odd head_dim is refused (RoPE rotates pairs), explicit or implied") {
  ModelConfig c = smol();
  c.head_dim = 63;
  c.head_dim_explicit = true;
  check_invalid(c, Status::invalid_argument, "head_dim must be even, got 63");
  c = smol();
  c.hidden_size = 9 * 7;  // implied head_dim 7
  c.head_dim = 7;
  check_invalid(c, Status::invalid_argument, "head_dim must be even, got 7");
}

TEST_CASE("model config: model_config_to_json validates first") {
  ModelConfig c = smol();
  c.hidden_size = 0;
  const Failure f = failure_of([&] { fp8rl::model::model_config_to_json(c); });
  CHECK(f.status == Status::invalid_argument);
  CHECK(f.message.find("hidden_size") != std::string::npos);
}

TEST_CASE("model config: unsupported architectures and options") {
  check_rejected(smol_json_with(R"("model_type": "llama")", R"("model_type": "mistral")"), Status::unsupported,
                 "model_type \"mistral\" is not supported; supported: llama, qwen2, qwen3");
  check_rejected(smol_json_with(R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})"),
                 Status::unsupported, "rope_type \"yarn\" is not supported");
  check_rejected(smol_json_with(R"("hidden_act": "silu")", R"("hidden_act": "gelu")"), Status::unsupported,
                 "hidden_act \"gelu\" is not supported");
  check_rejected(smol_json_with(R"("attention_bias": false)", R"("mlp_bias": true)"), Status::unsupported,
                 "mlp_bias true is not supported");
  check_rejected(smol_json_with(R"("use_cache": true)", R"("use_sliding_window": true)"), Status::unsupported,
                 "use_sliding_window true is not supported");
}

TEST_CASE("model config: malformed files are corrupt_data naming file and key") {
  check_rejected("[1, 2]", Status::corrupt_data, "expected an object, got array");
  check_rejected(smol_json_with(R"("hidden_size": 576,)", ""), Status::corrupt_data,
                 "missing required key \"hidden_size\"");
  check_rejected(smol_json_with(R"("model_type": "llama",)", ""), Status::corrupt_data,
                 "missing required key \"model_type\"");
  check_rejected(smol_json_with(R"("rms_norm_eps": 1e-05,)", ""), Status::corrupt_data,
                 "missing required key \"rms_norm_eps\"");
  check_rejected(smol_json_with(R"("hidden_size": 576)", R"("hidden_size": "576")"), Status::corrupt_data,
                 "key \"hidden_size\": expected an integer, got string");
  check_rejected(smol_json_with(R"("num_hidden_layers": 30)", R"("num_hidden_layers": 30.5)"), Status::corrupt_data,
                 "key \"num_hidden_layers\": expected an integer, got a non-integer number");
  check_rejected(smol_json_with(R"("tie_word_embeddings": true)", R"("tie_word_embeddings": 1)"), Status::corrupt_data,
                 "key \"tie_word_embeddings\": expected true or false, got number");
  check_rejected(smol_json_with(R"("rms_norm_eps": 1e-05)", R"("rms_norm_eps": "1e-05")"), Status::corrupt_data,
                 "key \"rms_norm_eps\": expected a number, got string");
  check_rejected(smol_json_with(R"("eos_token_id": 0)", R"("eos_token_id": [0, "2"])"), Status::corrupt_data,
                 "key \"eos_token_id\": expected an integer, got string");
  check_rejected(smol_json_with(R"("model_type": "llama")", R"("model_type": 7)"), Status::corrupt_data,
                 "key \"model_type\": expected a string, got number");
  check_rejected(smol_json_with(R"("rope_scaling": null)", R"("rope_scaling": 2)"), Status::corrupt_data,
                 "rope_scaling: expected an object, got number");
  check_rejected(smol_json_with(R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})"),
                 Status::corrupt_data, "rope_scaling: missing required key \"low_freq_factor\"");
  check_rejected(smol_json_with(R"("rope_scaling": null)", R"("rope_scaling": {"factor": 8.0})"), Status::corrupt_data,
                 "rope_scaling: missing required key \"type\"");
}

TEST_CASE("model config: inconsistent files are corrupt_data, not invalid_argument") {
  check_rejected(smol_json_with(R"("num_key_value_heads": 3)", R"("num_key_value_heads": 2)"), Status::corrupt_data,
                 "num_attention_heads (9) is not a multiple of num_key_value_heads (2)");
  check_rejected(smol_json_with(R"("hidden_size": 576)", R"("hidden_size": 577)"), Status::corrupt_data,
                 "hidden_size (577) != num_attention_heads (9) * head_dim (64)");
  check_rejected(smol_json_with(R"("num_attention_heads": 9)", R"("num_attention_heads": 0)"), Status::corrupt_data,
                 "num_attention_heads must be positive");
  check_rejected(smol_json_with(R"("rms_norm_eps": 1e-05)", R"("rms_norm_eps": 0)"), Status::corrupt_data,
                 "rms_norm_eps must be positive");
  check_rejected(smol_json_with(R"("rope_theta": 100000)", R"("rope_theta": -1)"), Status::corrupt_data,
                 "rope_theta must be positive");
  check_rejected(smol_json_with(R"("vocab_size": 49152)", R"("vocab_size": 9223372036854775807)"), Status::corrupt_data,
                 "vocab_size is 9223372036854775807, above this library's limit");
  const std::string qwen2 = fp8rl::test::kQwen25_05B;
  check_rejected(qwen2.substr(0, qwen2.size() - 1) + R"(, "attention_bias": false})", Status::corrupt_data,
                 "attention_bias false contradicts model_type qwen2");
}

TEST_CASE("model config: file errors") {
  fp8rl::test::TempDir dir;
  const std::string missing = dir.file("absent.json");
  Failure f = failure_of([&] { fp8rl::model::load_model_config(missing); });
  CHECK(f.status == Status::io_error);
  CHECK(f.message.find(missing) != std::string::npos);

  const std::string not_json = dir.file("config.json");
  fp8rl::test::write_bytes(not_json, "model_type: llama\n");
  f = failure_of([&] { fp8rl::model::load_model_config(not_json); });
  CHECK(f.status == Status::corrupt_data);
  CHECK(f.message.find(not_json) != std::string::npos);

  const std::string big = dir.file("big.json");
  fp8rl::test::write_bytes(big, std::string((1u << 20) + 1, ' '));
  f = failure_of([&] { fp8rl::model::load_model_config(big); });
  CHECK(f.status == Status::corrupt_data);
  CHECK(f.message.find(big) != std::string::npos);

  // A folder where the file should go.
  f = failure_of([&] { fp8rl::model::save_model_config(dir.file("no/such/dir/config.json"), smol()); });
  CHECK(f.status == Status::io_error);
  CHECK(f.message.find("no/such/dir") != std::string::npos);
}
