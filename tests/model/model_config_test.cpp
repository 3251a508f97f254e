// ModelConfig from config.json texts modeled on four public models: every
// field against values written here, the parameter count against a hand
// computation and the publicly reported size, and save -> load round trips.
#include "core/model/model_config.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/io/json.h"
#include "io/io_test_support.h"
#include "model/real_configs.h"

namespace {

using fp8rl::io::parse_json;
using fp8rl::model::ModelConfig;
using fp8rl::model::ModelFamily;
using fp8rl::model::parameter_count;
using fp8rl::model::RopeScalingType;

ModelConfig parse(const char* text) { return fp8rl::model::parse_model_config(parse_json(text), "config.json"); }

// Field-by-field equality, for the round trips.
void check_same(const ModelConfig& a, const ModelConfig& b) {
  CHECK(a.family == b.family);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.hidden_size == b.hidden_size);
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.num_attention_heads == b.num_attention_heads);
  CHECK(a.num_key_value_heads == b.num_key_value_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.head_dim_explicit == b.head_dim_explicit);
  CHECK(a.intermediate_size == b.intermediate_size);
  CHECK(a.max_position_embeddings == b.max_position_embeddings);
  CHECK(a.rms_norm_eps == b.rms_norm_eps);
  CHECK(a.rope_theta == b.rope_theta);
  CHECK(a.rope_scaling.type == b.rope_scaling.type);
  CHECK(a.rope_scaling.factor == b.rope_scaling.factor);
  CHECK(a.rope_scaling.low_freq_factor == b.rope_scaling.low_freq_factor);
  CHECK(a.rope_scaling.high_freq_factor == b.rope_scaling.high_freq_factor);
  CHECK(a.rope_scaling.original_max_position_embeddings == b.rope_scaling.original_max_position_embeddings);
  CHECK(a.tie_word_embeddings == b.tie_word_embeddings);
  CHECK(a.attention_bias == b.attention_bias);
  CHECK(a.qk_norm == b.qk_norm);
  CHECK(a.bos_token_id == b.bos_token_id);
  CHECK(a.eos_token_ids == b.eos_token_ids);
  CHECK(a.torch_dtype == b.torch_dtype);
}

void check_round_trip(const ModelConfig& config) {
  fp8rl::test::TempDir dir;
  const std::string path = dir.file("config.json");
  fp8rl::model::save_model_config(path, config);
  check_same(fp8rl::model::load_model_config(path), config);
  // The JSON tree alone round-trips too, without the file.
  check_same(fp8rl::model::parse_model_config(fp8rl::model::model_config_to_json(config), "tree"), config);
}

// Relative distance to a publicly reported size (given to 4 significant
// digits, so 0.1% covers the rounding and nothing else).
void check_near_reported(int64_t count, double reported) {
  const double relative = (static_cast<double>(count) - reported) / reported;
  CHECK_MESSAGE((relative < 1e-3 && relative > -1e-3), count << " vs reported " << reported);
}

}  // namespace

TEST_CASE("model config: Llama-3.2-1B") {
  const ModelConfig c = parse(fp8rl::test::kLlama32_1B);
  CHECK(c.family == ModelFamily::llama);
  CHECK(c.vocab_size == 128256);
  CHECK(c.hidden_size == 2048);
  CHECK(c.num_layers == 16);
  CHECK(c.num_attention_heads == 32);
  CHECK(c.num_key_value_heads == 8);
  CHECK(c.head_dim == 64);
  CHECK(c.head_dim_explicit);
  CHECK(c.intermediate_size == 8192);
  CHECK(c.max_position_embeddings == 131072);
  CHECK(c.rms_norm_eps == 1e-5);
  CHECK(c.rope_theta == 500000.0);
  CHECK(c.rope_scaling.type == RopeScalingType::llama3);
  CHECK(c.rope_scaling.factor == 32.0);
  CHECK(c.rope_scaling.low_freq_factor == 1.0);
  CHECK(c.rope_scaling.high_freq_factor == 4.0);
  CHECK(c.rope_scaling.original_max_position_embeddings == 8192);
  CHECK(c.tie_word_embeddings);
  CHECK_FALSE(c.attention_bias);
  CHECK_FALSE(fp8rl::model::has_output_projection_bias(c));
  CHECK_FALSE(c.qk_norm);
  CHECK(c.bos_token_id == int64_t{128000});
  CHECK(c.eos_token_ids == std::vector<int64_t>{128001});
  CHECK(c.torch_dtype == "bfloat16");
  CHECK(fp8rl::model::q_dim(c) == 2048);
  CHECK(fp8rl::model::kv_dim(c) == 512);

  // embed + 16 * (q 2048x2048 + k,v 2048x512 + o 2048x2048 + MLP 3x2048x8192
  // + 2 norms) + final norm; lm_head tied.
  const int64_t layer = 2048 * 2048 + 2 * 2048 * 512 + 2048 * 2048 + 3 * 2048 * 8192 + 2 * 2048;
  const int64_t expected = int64_t{128256} * 2048 + 16 * layer + 2048;
  CHECK(parameter_count(c) == expected);
  CHECK(expected == 1235814400);
  check_near_reported(parameter_count(c), 1.236e9);
  check_round_trip(c);
}

TEST_CASE("model config: Qwen2.5-0.5B") {
  const ModelConfig c = parse(fp8rl::test::kQwen25_05B);
  CHECK(c.family == ModelFamily::qwen2);
  CHECK(c.vocab_size == 151936);
  CHECK(c.hidden_size == 896);
  CHECK(c.num_layers == 24);
  CHECK(c.num_attention_heads == 14);
  CHECK(c.num_key_value_heads == 2);
  CHECK(c.head_dim == 64);  // implied: 896 / 14
  CHECK_FALSE(c.head_dim_explicit);
  CHECK(c.intermediate_size == 4864);
  CHECK(c.max_position_embeddings == 32768);
  CHECK(c.rms_norm_eps == 1e-6);
  CHECK(c.rope_theta == 1000000.0);
  CHECK(c.rope_scaling.type == RopeScalingType::none);
  CHECK(c.tie_word_embeddings);
  CHECK(c.attention_bias);  // implied by qwen2, no key in the file
  CHECK_FALSE(fp8rl::model::has_output_projection_bias(c));
  CHECK_FALSE(c.qk_norm);
  CHECK(c.bos_token_id == int64_t{151643});
  CHECK(c.eos_token_ids == std::vector<int64_t>{151643});
  CHECK(c.torch_dtype == "bfloat16");
  CHECK(fp8rl::model::q_dim(c) == 896);
  CHECK(fp8rl::model::kv_dim(c) == 128);

  // q/k/v biases: 896 + 128 + 128; no o_proj bias.
  const int64_t layer = 896 * 896 + 2 * 896 * 128 + 896 * 896 + (896 + 2 * 128) + 3 * 896 * 4864 + 2 * 896;
  const int64_t expected = int64_t{151936} * 896 + 24 * layer + 896;
  CHECK(parameter_count(c) == expected);
  CHECK(expected == 494032768);
  check_near_reported(parameter_count(c), 494.0e6);
  check_round_trip(c);
}

TEST_CASE("model config: Qwen3-0.6B has head_dim * heads != hidden_size") {
  const ModelConfig c = parse(fp8rl::test::kQwen3_06B);
  CHECK(c.family == ModelFamily::qwen3);
  CHECK(c.vocab_size == 151936);
  CHECK(c.hidden_size == 1024);
  CHECK(c.num_layers == 28);
  CHECK(c.num_attention_heads == 16);
  CHECK(c.num_key_value_heads == 8);
  CHECK(c.head_dim == 128);
  CHECK(c.head_dim_explicit);
  CHECK(c.intermediate_size == 3072);
  CHECK(c.max_position_embeddings == 40960);
  CHECK(c.rms_norm_eps == 1e-6);
  CHECK(c.rope_theta == 1000000.0);  // written as the integer literal 1000000
  CHECK(c.rope_scaling.type == RopeScalingType::none);
  CHECK(c.tie_word_embeddings);
  CHECK_FALSE(c.attention_bias);
  CHECK(c.qk_norm);
  CHECK(c.bos_token_id == int64_t{151643});
  CHECK(c.eos_token_ids == std::vector<int64_t>{151645});
  CHECK(c.torch_dtype == "bfloat16");
  CHECK(fp8rl::model::q_dim(c) == 2048);
  CHECK(fp8rl::model::kv_dim(c) == 1024);

  // q_norm and k_norm: 128 weights each per layer.
  const int64_t layer = 1024 * 2048 + 2 * 1024 * 1024 + 2048 * 1024 + 3 * 1024 * 3072 + 2 * 1024 + 2 * 128;
  const int64_t expected = int64_t{151936} * 1024 + 28 * layer + 1024;
  CHECK(parameter_count(c) == expected);
  CHECK(expected == 596049920);
  // Qwen reports 0.6B total and 0.44B without the embedding.
  CHECK(expected - int64_t{151936} * 1024 == 440467456);
  check_round_trip(c);
}

TEST_CASE("model config: SmolLM2-135M is a llama with 9 heads") {
  const ModelConfig c = parse(fp8rl::test::kSmolLM2_135M);
  CHECK(c.family == ModelFamily::llama);
  CHECK(c.vocab_size == 49152);
  CHECK(c.hidden_size == 576);
  CHECK(c.num_layers == 30);
  CHECK(c.num_attention_heads == 9);
  CHECK(c.num_key_value_heads == 3);
  CHECK(c.head_dim == 64);
  CHECK_FALSE(c.head_dim_explicit);
  CHECK(c.intermediate_size == 1536);
  CHECK(c.max_position_embeddings == 8192);
  CHECK(c.rms_norm_eps == 1e-5);
  CHECK(c.rope_theta == 100000.0);
  CHECK(c.rope_scaling.type == RopeScalingType::none);
  CHECK(c.tie_word_embeddings);
  CHECK_FALSE(c.attention_bias);
  CHECK_FALSE(c.qk_norm);
  CHECK(c.bos_token_id == int64_t{0});
  CHECK(c.eos_token_ids == std::vector<int64_t>{0});
  CHECK(c.torch_dtype == "bfloat16");
  CHECK(fp8rl::model::q_dim(c) == 576);  // not a multiple of 128: valid
  CHECK(fp8rl::model::kv_dim(c) == 192);

  const int64_t layer = 576 * 576 + 2 * 576 * 192 + 576 * 576 + 3 * 576 * 1536 + 2 * 576;
  const int64_t expected = int64_t{49152} * 576 + 30 * layer + 576;
  CHECK(parameter_count(c) == expected);
  CHECK(expected == 134515008);
  check_near_reported(parameter_count(c), 134.5e6);
  check_round_trip(c);
}

TEST_CASE("model config: optional keys take Hugging Face's defaults") {
  const ModelConfig c = parse(R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 48,
    "num_hidden_layers": 2, "num_attention_heads": 3, "intermediate_size": 80,
    "rms_norm_eps": 1e-6, "max_position_embeddings": 64})");
  CHECK(c.num_key_value_heads == 3);
  CHECK(c.head_dim == 16);
  CHECK_FALSE(c.head_dim_explicit);
  CHECK(c.rope_theta == 10000.0);
  CHECK(c.rope_scaling.type == RopeScalingType::none);
  CHECK_FALSE(c.tie_word_embeddings);
  CHECK_FALSE(c.attention_bias);
  CHECK_FALSE(c.bos_token_id.has_value());
  CHECK(c.eos_token_ids.empty());
  CHECK(c.torch_dtype.empty());
  // Untied: lm_head adds a second vocab x hidden.
  const int64_t layer = 48 * 48 * 4 + 3 * 48 * 80 + 2 * 48;
  CHECK(parameter_count(c) == 2 * 100 * 48 + 2 * layer + 48);
  check_round_trip(c);
}

TEST_CASE("model config: eos list, \"dtype\", old rope \"type\" key, llama attention_bias") {
  const ModelConfig c = parse(R"({"model_type": "llama", "vocab_size": 200, "hidden_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96,
    "rms_norm_eps": 1e-5, "max_position_embeddings": 128, "attention_bias": true, "dtype": "float32",
    "eos_token_id": [1, 7, 9], "bos_token_id": null,
    "rope_scaling": {"type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
                     "original_max_position_embeddings": 64}})");
  CHECK(c.eos_token_ids == std::vector<int64_t>{1, 7, 9});
  CHECK_FALSE(c.bos_token_id.has_value());
  CHECK(c.torch_dtype == "float32");
  CHECK(c.rope_scaling.type == RopeScalingType::llama3);
  CHECK(c.rope_scaling.factor == 8.0);
  CHECK(c.attention_bias);
  CHECK(fp8rl::model::has_output_projection_bias(c));
  // q/k/v biases 64 + 32 + 32 and the o_proj bias 64.
  const int64_t layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + (64 + 2 * 32) + 64 + 3 * 64 * 96 + 2 * 64;
  CHECK(parameter_count(c) == 2 * 200 * 64 + layer + 64);
  check_round_trip(c);
}

TEST_CASE("model config: rope_type default means no scaling") {
  const ModelConfig c = parse(R"({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 8,
    "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8, "rms_norm_eps": 1e-6,
    "max_position_embeddings": 16, "rope_scaling": {"rope_type": "default"}})");
  CHECK(c.rope_scaling.type == RopeScalingType::none);
}
