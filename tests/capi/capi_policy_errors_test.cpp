// The policy and rollout functions' error model: NULL pointers, bad sizes,
// bad enum values, malformed token arrays, unreadable or corrupt folders and
// non-finite scales each give an error status and a message naming the
// culprit; out-parameters stay unchanged and the objects keep working.
#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "capi/capi_policy_fixture.h"

using namespace capi_test;

namespace {

// A recognisable non-NULL pointer that must survive a failed call.
template <class T>
T* sentinel() {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(0x5EED));
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("fp8rl_capi_errors_" + name)).string();
}

}  // namespace

TEST_CASE("model configs: NULL, struct_size, enum values and sizes are checked") {
  check_error(fp8rl_model_config_init(nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "config is NULL");
  const fp8rl_model_config good = llama_config();
  int64_t count = -1;
  check_error(fp8rl_model_config_parameter_count(nullptr, &count), FP8RL_ERROR_INVALID_ARGUMENT, "config is NULL");
  check_error(fp8rl_model_config_parameter_count(&good, nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_count");

  struct Case {
    const char* needle;
    void (*spoil)(fp8rl_model_config&);
  };
  const Case cases[] = {
      {"family", [](fp8rl_model_config& c) { c.family = static_cast<fp8rl_model_family>(4); }},
      {"family", [](fp8rl_model_config& c) { c.family = static_cast<fp8rl_model_family>(1000000); }},
      {"rope_scaling", [](fp8rl_model_config& c) { c.rope_scaling = static_cast<fp8rl_rope_scaling>(2); }},
      {"vocab_size", [](fp8rl_model_config& c) { c.vocab_size = 0; }},
      {"hidden_size", [](fp8rl_model_config& c) { c.hidden_size = -96; }},
      {"num_key_value_heads", [](fp8rl_model_config& c) { c.num_key_value_heads = 3; }},
      {"hidden_size",
       [](fp8rl_model_config& c) {
         c.num_attention_heads = 5;
         c.num_key_value_heads = 5;
       }},
      {"head_dim", [](fp8rl_model_config& c) { c.head_dim = -1; }},
      {"rms_norm_eps", [](fp8rl_model_config& c) { c.rms_norm_eps = std::nan(""); }},
      {"rope_theta", [](fp8rl_model_config& c) { c.rope_theta = 0.0; }},
      {"bos_token_id", [](fp8rl_model_config& c) { c.bos_token_id = -2; }},
      {"bos_token_id", [](fp8rl_model_config& c) { c.bos_token_id = 300; }},
      {"num_eos_token_ids", [](fp8rl_model_config& c) { c.num_eos_token_ids = FP8RL_MAX_EOS_TOKEN_IDS + 1; }},
      {"num_eos_token_ids", [](fp8rl_model_config& c) { c.num_eos_token_ids = -1; }},
      {"eos_token_id",
       [](fp8rl_model_config& c) {
         c.eos_token_ids[0] = 300;
         c.num_eos_token_ids = 1;
       }},
      {"qk_norm", [](fp8rl_model_config& c) { c.family = FP8RL_MODEL_FAMILY_QWEN3; }},
      {"attention_bias", [](fp8rl_model_config& c) { c.family = FP8RL_MODEL_FAMILY_QWEN2; }},
      {"vocab_size is 1099511627776, above this library's limit",
       [](fp8rl_model_config& c) {
         c.vocab_size = int64_t{1} << 40;
         c.hidden_size = int64_t{1} << 40;
         c.num_attention_heads = 1;
         c.num_key_value_heads = 1;
       }},
  };
  CpuContext cpu;
  for (const Case& test : cases) {
    CAPTURE(test.needle);
    fp8rl_model_config bad = good;
    test.spoil(bad);
    count = -1;
    check_error(fp8rl_model_config_parameter_count(&bad, &count), FP8RL_ERROR_INVALID_ARGUMENT, test.needle);
    CHECK(count == -1);
    fp8rl_policy* policy = sentinel<fp8rl_policy>();
    check_error(fp8rl_policy_create_random(cpu.get(), &bad, 1, &policy), FP8RL_ERROR_INVALID_ARGUMENT, test.needle);
    CHECK(policy == sentinel<fp8rl_policy>());
  }

  fp8rl_model_config wrong_size = good;
  wrong_size.struct_size = 0;
  check_error(fp8rl_model_config_parameter_count(&wrong_size, &count), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");
  wrong_size.struct_size = sizeof(fp8rl_model_config) + 8;
  check_error(fp8rl_model_config_parameter_count(&wrong_size, &count), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");
}

TEST_CASE("policy creation: NULL arguments leave *out unchanged") {
  CpuContext cpu;
  const fp8rl_model_config config = llama_config();
  fp8rl_policy* policy = sentinel<fp8rl_policy>();
  check_error(fp8rl_policy_create_random(nullptr, &config, 1, &policy), FP8RL_ERROR_INVALID_ARGUMENT, "context");
  check_error(fp8rl_policy_create_random(cpu.get(), nullptr, 1, &policy), FP8RL_ERROR_INVALID_ARGUMENT, "config");
  check_error(fp8rl_policy_create_random(cpu.get(), &config, 1, nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_policy");
  check_error(fp8rl_policy_load(nullptr, "x", &policy), FP8RL_ERROR_INVALID_ARGUMENT, "context");
  check_error(fp8rl_policy_load(cpu.get(), nullptr, &policy), FP8RL_ERROR_INVALID_ARGUMENT, "folder");
  check_error(fp8rl_policy_load(cpu.get(), "x", nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_policy");
  CHECK(policy == sentinel<fp8rl_policy>());
}

TEST_CASE("loading: a missing folder is an I/O error, a corrupt weights file corrupt data") {
  CpuContext cpu;
  fp8rl_policy* policy = sentinel<fp8rl_policy>();
  const std::string missing = temp_path("does_not_exist");
  std::filesystem::remove_all(missing);
  check_error(fp8rl_policy_load(cpu.get(), missing.c_str(), &policy), FP8RL_ERROR_IO, "does_not_exist");
  CHECK(policy == sentinel<fp8rl_policy>());

  const std::string folder = temp_path("corrupt");
  std::filesystem::remove_all(folder);
  {
    Policy original(cpu.get(), llama_config());
    REQUIRE(fp8rl_policy_save(original.get(), folder.c_str(), FP8RL_DTYPE_F32) == FP8RL_OK);
  }
  const std::string weights = folder + "/model.safetensors";
  REQUIRE(std::filesystem::exists(weights));
  {
    std::ofstream garbage(weights, std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 4096; ++i) garbage.put(static_cast<char>((i * 131 + 7) & 0xFF));
  }
  check_error(fp8rl_policy_load(cpu.get(), folder.c_str(), &policy), FP8RL_ERROR_CORRUPT_DATA, "model.safetensors");
  CHECK(policy == sentinel<fp8rl_policy>());

  // A truncated file, and a config.json that is not JSON.
  std::filesystem::resize_file(weights, 5);
  check_error(fp8rl_policy_load(cpu.get(), folder.c_str(), &policy), FP8RL_ERROR_CORRUPT_DATA, "model.safetensors");
  {
    std::ofstream config(folder + "/config.json", std::ios::trunc);
    config << "{\"model_type\": \"llama\", ";
  }
  check_error(fp8rl_policy_load(cpu.get(), folder.c_str(), &policy), FP8RL_ERROR_CORRUPT_DATA, "config.json");
  CHECK(policy == sentinel<fp8rl_policy>());
  std::filesystem::remove_all(folder);
}

TEST_CASE("saving: NULL, a bad dtype and an unwritable folder are reported") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  check_error(fp8rl_policy_save(nullptr, "x", FP8RL_DTYPE_F32), FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  check_error(fp8rl_policy_save(policy.get(), nullptr, FP8RL_DTYPE_F32), FP8RL_ERROR_INVALID_ARGUMENT, "folder");
  check_error(fp8rl_policy_save(policy.get(), "x", FP8RL_DTYPE_E4M3), FP8RL_ERROR_INVALID_ARGUMENT, "dtype");
  check_error(fp8rl_policy_save(policy.get(), "x", static_cast<fp8rl_dtype>(77)), FP8RL_ERROR_INVALID_ARGUMENT,
              "dtype");
  const std::string file = temp_path("a_file");
  { std::ofstream(file) << "not a folder"; }
  const std::string below_file = file + "/model";
  const fp8rl_status status = fp8rl_policy_save(policy.get(), below_file.c_str(), FP8RL_DTYPE_F32);
  CHECK(status == FP8RL_ERROR_IO);
  CHECK(std::string(fp8rl_last_error_message()).find("a_file") != std::string::npos);
  std::filesystem::remove(file);
}

TEST_CASE("FP8 export: written next to a saved policy, NULL and an unwritable folder are reported") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  const std::string folder = temp_path("fp8_export");
  REQUIRE(fp8rl_policy_export_fp8(policy.get(), folder.c_str()) == FP8RL_OK);
  CHECK(std::filesystem::exists(folder + "/config.json"));
  CHECK(std::filesystem::exists(folder + "/model.safetensors"));
  std::filesystem::remove_all(folder);
  check_error(fp8rl_policy_export_fp8(nullptr, "x"), FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  check_error(fp8rl_policy_export_fp8(policy.get(), nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "folder");
  const std::string file = temp_path("b_file");
  { std::ofstream(file) << "not a folder"; }
  const std::string below_file = file + "/model";
  CHECK(fp8rl_policy_export_fp8(policy.get(), below_file.c_str()) == FP8RL_ERROR_IO);
  CHECK(std::string(fp8rl_last_error_message()).find("b_file") != std::string::npos);
  std::filesystem::remove(file);
}

TEST_CASE("recipes: NULL, struct_size, enum values, negative layers and FP8 attention over BF16 KV") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  check_error(fp8rl_recipe_init(nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "recipe is NULL");
  fp8rl_recipe previous = default_recipe();
  previous.linear = FP8RL_PRECISION_FP8;
  policy.set_recipe(previous);

  check_error(fp8rl_policy_set_recipe(nullptr, &previous), FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  check_error(fp8rl_policy_set_recipe(policy.get(), nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "recipe is NULL");
  fp8rl_recipe bad = default_recipe();
  bad.struct_size = 3;
  check_error(fp8rl_policy_set_recipe(policy.get(), &bad), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");

  struct Case {
    const char* needle;
    void (*spoil)(fp8rl_recipe&);
  };
  const Case cases[] = {
      {"recipe->linear", [](fp8rl_recipe& r) { r.linear = static_cast<fp8rl_precision>(2); }},
      {"recipe->kv_cache", [](fp8rl_recipe& r) { r.kv_cache = static_cast<fp8rl_precision>(1000000); }},
      {"recipe->attention", [](fp8rl_recipe& r) { r.attention = static_cast<fp8rl_precision>(9); }},
      {"recipe->head", [](fp8rl_recipe& r) { r.head = static_cast<fp8rl_precision>(-1); }},
      {"recipe->scale_format", [](fp8rl_recipe& r) { r.scale_format = static_cast<fp8rl_scale_format>(2); }},
      {"layers", [](fp8rl_recipe& r) { r.bf16_first_layers = -1; }},
      {"layers", [](fp8rl_recipe& r) { r.bf16_last_layers = -2; }},
      {"KV cache", [](fp8rl_recipe& r) { r.attention = FP8RL_PRECISION_FP8; }},
  };
  for (const Case& test : cases) {
    CAPTURE(test.needle);
    bad = default_recipe();
    test.spoil(bad);
    check_error(fp8rl_policy_set_recipe(policy.get(), &bad), FP8RL_ERROR_INVALID_ARGUMENT, test.needle);
    fp8rl_recipe current = default_recipe();
    REQUIRE(fp8rl_policy_get_recipe(policy.get(), &current) == FP8RL_OK);
    CHECK(current.linear == FP8RL_PRECISION_FP8);  // unchanged by the failed call
  }
  check_error(fp8rl_policy_get_recipe(nullptr, &bad), FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  check_error(fp8rl_policy_get_recipe(policy.get(), nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_recipe");
  bad.struct_size = 0;
  check_error(fp8rl_policy_get_recipe(policy.get(), &bad), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");
}

TEST_CASE("attention scales: NULL, wrong counts, NaN, zero, negative and infinite values") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  const float one[2] = {1.0f, 1.0f};
  float out[2] = {0, 0};
  check_error(fp8rl_policy_set_attention_scales(nullptr, one, one, one, 2), FP8RL_ERROR_INVALID_ARGUMENT, "policy");
  check_error(fp8rl_policy_set_attention_scales(policy.get(), nullptr, one, one, 2), FP8RL_ERROR_INVALID_ARGUMENT,
              "q is NULL");
  check_error(fp8rl_policy_set_attention_scales(policy.get(), one, nullptr, one, 2), FP8RL_ERROR_INVALID_ARGUMENT,
              "k is NULL");
  check_error(fp8rl_policy_set_attention_scales(policy.get(), one, one, nullptr, 2), FP8RL_ERROR_INVALID_ARGUMENT,
              "v is NULL");
  check_error(fp8rl_policy_set_attention_scales(policy.get(), one, one, one, 3), FP8RL_ERROR_INVALID_ARGUMENT,
              "num_layers");
  check_error(fp8rl_policy_get_attention_scales(policy.get(), out, out, out, 1), FP8RL_ERROR_INVALID_ARGUMENT,
              "num_layers");
  check_error(fp8rl_policy_get_attention_scales(policy.get(), out, nullptr, out, 2), FP8RL_ERROR_INVALID_ARGUMENT,
              "k is NULL");
  for (float value : {std::nanf(""), 0.0f, -1.0f, std::numeric_limits<float>::infinity()}) {
    CAPTURE(value);
    const float bad[2] = {2.0f, value};
    const fp8rl_status status = fp8rl_policy_set_attention_scales(policy.get(), one, one, bad, 2);
    CHECK(status == FP8RL_ERROR_INVALID_ARGUMENT);
    const std::string message = fp8rl_last_error_message();
    CHECK_MESSAGE(message.find("layer 1") != std::string::npos, message);
  }
  float q[2], k[2], v[2];
  REQUIRE(fp8rl_policy_get_attention_scales(policy.get(), q, k, v, 2) == FP8RL_OK);
  CHECK(v[0] == 1.0f);  // unchanged by the failed calls
  CHECK(v[1] == 1.0f);
}

TEST_CASE("get_config and parameter_count: NULL and struct_size") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  fp8rl_model_config config;
  REQUIRE(fp8rl_model_config_init(&config) == FP8RL_OK);
  check_error(fp8rl_policy_get_config(nullptr, &config), FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  check_error(fp8rl_policy_get_config(policy.get(), nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_config");
  config.struct_size = sizeof(config) + 4;
  check_error(fp8rl_policy_get_config(policy.get(), &config), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");
  int64_t count = 0;
  check_error(fp8rl_policy_parameter_count(nullptr, &count), FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  check_error(fp8rl_policy_parameter_count(policy.get(), nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_count");
}

TEST_CASE("generation: malformed prompts, seeds and options are reported, naming the culprit") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  const std::vector<int32_t> tokens{5, 6, 7, 8, 9};
  const std::vector<int64_t> offsets{0, 2, 5};
  const uint64_t seeds[2] = {1, 2};
  const fp8rl_sampling_options options = sampling(1.0f, 4);
  fp8rl_rollout* rollout = sentinel<fp8rl_rollout>();
  auto run = [&](const int32_t* t, const int64_t* o, int64_t n, const uint64_t* s, const fp8rl_sampling_options* opt) {
    return fp8rl_policy_generate(policy.get(), t, o, n, s, opt, &rollout);
  };

  check_error(fp8rl_sampling_options_init(nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "options is NULL");
  check_error(fp8rl_policy_generate(nullptr, tokens.data(), offsets.data(), 2, seeds, &options, &rollout),
              FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  check_error(fp8rl_policy_generate(policy.get(), tokens.data(), offsets.data(), 2, seeds, &options, nullptr),
              FP8RL_ERROR_INVALID_ARGUMENT, "out_rollout");
  check_error(run(nullptr, offsets.data(), 2, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "prompt_tokens");
  check_error(run(tokens.data(), nullptr, 2, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "prompt_offsets");
  check_error(run(tokens.data(), offsets.data(), 0, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "num_prompts");
  check_error(run(tokens.data(), offsets.data(), -1, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "num_prompts");
  check_error(run(tokens.data(), offsets.data(), 2, nullptr, &options), FP8RL_ERROR_INVALID_ARGUMENT, "seeds");
  check_error(run(tokens.data(), offsets.data(), 2, seeds, nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "options is NULL");

  std::vector<int32_t> bad_tokens = tokens;
  bad_tokens[3] = 300;  // == vocab
  check_error(run(bad_tokens.data(), offsets.data(), 2, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "token id 300");
  check_error(run(bad_tokens.data(), offsets.data(), 2, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "position 1");
  bad_tokens[3] = -4;
  check_error(run(bad_tokens.data(), offsets.data(), 2, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "token id -4");
  const std::vector<int64_t> decreasing{0, 3, 2};
  check_error(run(tokens.data(), decreasing.data(), 2, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "offsets");
  const std::vector<int64_t> empty_prompt{0, 2, 2};
  check_error(run(tokens.data(), empty_prompt.data(), 2, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "empty");
  const std::vector<int64_t> shifted{1, 2, 5};
  check_error(run(tokens.data(), shifted.data(), 2, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "offsets[0]");
  const std::vector<int32_t> too_long(129, 3);  // longer than max_position_embeddings
  const std::vector<int64_t> one_long{0, 129};
  check_error(run(too_long.data(), one_long.data(), 1, seeds, &options), FP8RL_ERROR_INVALID_ARGUMENT, "129");

  struct Case {
    const char* needle;
    fp8rl_status expected;
    void (*spoil)(fp8rl_sampling_options&);
  };
  static const int32_t out_of_vocab[1] = {300};
  const Case cases[] = {
      {"struct_size", FP8RL_ERROR_VERSION_MISMATCH, [](fp8rl_sampling_options& o) { o.struct_size = 2; }},
      {"temperature", FP8RL_ERROR_INVALID_ARGUMENT, [](fp8rl_sampling_options& o) { o.temperature = std::nanf(""); }},
      {"temperature", FP8RL_ERROR_INVALID_ARGUMENT, [](fp8rl_sampling_options& o) { o.temperature = -1.0f; }},
      {"top_k", FP8RL_ERROR_INVALID_ARGUMENT, [](fp8rl_sampling_options& o) { o.top_k = -1; }},
      {"top_p", FP8RL_ERROR_INVALID_ARGUMENT, [](fp8rl_sampling_options& o) { o.top_p = 0.0f; }},
      {"top_p", FP8RL_ERROR_INVALID_ARGUMENT, [](fp8rl_sampling_options& o) { o.top_p = 1.5f; }},
      {"max_new_tokens", FP8RL_ERROR_INVALID_ARGUMENT, [](fp8rl_sampling_options& o) { o.max_new_tokens = 0; }},
      {"batch_slots", FP8RL_ERROR_INVALID_ARGUMENT, [](fp8rl_sampling_options& o) { o.batch_slots = -1; }},
      {"max_tokens_per_step", FP8RL_ERROR_INVALID_ARGUMENT,
       [](fp8rl_sampling_options& o) { o.max_tokens_per_step = 0; }},
      {"stop_token_ids is NULL", FP8RL_ERROR_INVALID_ARGUMENT,
       [](fp8rl_sampling_options& o) { o.num_stop_token_ids = 2; }},
      {"num_stop_token_ids", FP8RL_ERROR_INVALID_ARGUMENT,
       [](fp8rl_sampling_options& o) { o.num_stop_token_ids = -1; }},
      {"stop token id 300", FP8RL_ERROR_INVALID_ARGUMENT,
       [](fp8rl_sampling_options& o) {
         o.stop_token_ids = out_of_vocab;
         o.num_stop_token_ids = 1;
       }},
  };
  for (const Case& test : cases) {
    CAPTURE(test.needle);
    fp8rl_sampling_options bad = options;
    test.spoil(bad);
    check_error(run(tokens.data(), offsets.data(), 2, seeds, &bad), test.expected, test.needle);
  }
  CHECK(rollout == sentinel<fp8rl_rollout>());

  // The policy still generates after all that.
  REQUIRE(run(tokens.data(), offsets.data(), 2, seeds, &options) == FP8RL_OK);
  CHECK(rollout != sentinel<fp8rl_rollout>());
  fp8rl_rollout_destroy(rollout);
}

TEST_CASE("scoring: NULL, malformed prompt lengths and a too small capacity") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  const std::vector<int32_t> tokens{5, 6, 7, 8, 9, 10, 11};
  const std::vector<int64_t> offsets{0, 3, 7};
  const std::vector<int64_t> prompts{1, 2};  // completions of 2 and 2 tokens
  const fp8rl_sampling_options options = sampling();
  std::vector<float> out(4, 7.0f);
  auto score = [&](const int64_t* lengths, int64_t capacity) {
    return fp8rl_policy_score(policy.get(), tokens.data(), offsets.data(), 2, lengths, &options, out.data(), capacity);
  };
  REQUIRE(score(prompts.data(), 4) == FP8RL_OK);
  for (float logprob : out) CHECK(logprob <= 0.0f);
  out.assign(4, 7.0f);
  check_error(score(prompts.data(), 3), FP8RL_ERROR_INVALID_ARGUMENT, "capacity");
  CHECK(out[0] == 7.0f);  // nothing written
  check_error(score(nullptr, 4), FP8RL_ERROR_INVALID_ARGUMENT, "prompt_lengths");
  const std::vector<int64_t> zero{0, 2};
  check_error(score(zero.data(), 4), FP8RL_ERROR_INVALID_ARGUMENT, "prompt");
  const std::vector<int64_t> too_long{1, 5};
  check_error(score(too_long.data(), 9), FP8RL_ERROR_INVALID_ARGUMENT, "prompt");
  check_error(fp8rl_policy_score(nullptr, tokens.data(), offsets.data(), 2, prompts.data(), &options, out.data(), 4),
              FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  check_error(fp8rl_policy_score(policy.get(), nullptr, offsets.data(), 2, prompts.data(), &options, out.data(), 4),
              FP8RL_ERROR_INVALID_ARGUMENT, "tokens");
  check_error(fp8rl_policy_score(policy.get(), tokens.data(), nullptr, 2, prompts.data(), &options, out.data(), 4),
              FP8RL_ERROR_INVALID_ARGUMENT, "offsets");
  check_error(
      fp8rl_policy_score(policy.get(), tokens.data(), offsets.data(), 0, prompts.data(), &options, out.data(), 4),
      FP8RL_ERROR_INVALID_ARGUMENT, "num_sequences");
  check_error(
      fp8rl_policy_score(policy.get(), tokens.data(), offsets.data(), 2, prompts.data(), nullptr, out.data(), 4),
      FP8RL_ERROR_INVALID_ARGUMENT, "options");
  check_error(fp8rl_policy_score(policy.get(), tokens.data(), offsets.data(), 2, prompts.data(), &options, nullptr, 4),
              FP8RL_ERROR_INVALID_ARGUMENT, "logprobs");
  std::vector<int32_t> bad_tokens = tokens;
  bad_tokens[6] = 1000;
  check_error(
      fp8rl_policy_score(policy.get(), bad_tokens.data(), offsets.data(), 2, prompts.data(), &options, out.data(), 4),
      FP8RL_ERROR_INVALID_ARGUMENT, "token id 1000");
}

TEST_CASE("rollout accessors: NULL, index range and capacity") {
  CpuContext cpu;
  Policy policy(cpu.get(), llama_config());
  const Prompts prompts = mixed_prompts();
  const fp8rl_sampling_options options = sampling(1.0f, 3);
  fp8rl_rollout* rollout = nullptr;
  REQUIRE(fp8rl_policy_generate(policy.get(), prompts.tokens.data(), prompts.offsets.data(), prompts.count(),
                                prompts.seeds.data(), &options, &rollout) == FP8RL_OK);
  int64_t value = -1;
  check_error(fp8rl_rollout_count(nullptr, &value), FP8RL_ERROR_INVALID_ARGUMENT, "rollout is NULL");
  check_error(fp8rl_rollout_count(rollout, nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_count");
  check_error(fp8rl_rollout_total_tokens(nullptr, &value), FP8RL_ERROR_INVALID_ARGUMENT, "rollout is NULL");
  check_error(fp8rl_rollout_total_tokens(rollout, nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "out_total");
  int64_t length = -1;
  check_error(fp8rl_rollout_get(nullptr, 0, nullptr, nullptr, &length, nullptr), FP8RL_ERROR_INVALID_ARGUMENT,
              "rollout is NULL");
  check_error(fp8rl_rollout_get(rollout, 4, nullptr, nullptr, &length, nullptr), FP8RL_ERROR_INVALID_ARGUMENT,
              "index is 4");
  check_error(fp8rl_rollout_get(rollout, -1, nullptr, nullptr, &length, nullptr), FP8RL_ERROR_INVALID_ARGUMENT,
              "index is -1");
  CHECK(length == -1);
  REQUIRE(fp8rl_rollout_total_tokens(rollout, &value) == FP8RL_OK);
  CHECK(value == 12);
  std::vector<int32_t> tokens(12, -1);
  std::vector<float> logprobs(12, 1.0f);
  check_error(fp8rl_rollout_copy(nullptr, tokens.data(), logprobs.data(), 12, nullptr, nullptr),
              FP8RL_ERROR_INVALID_ARGUMENT, "rollout is NULL");
  check_error(fp8rl_rollout_copy(rollout, tokens.data(), logprobs.data(), 11, nullptr, nullptr),
              FP8RL_ERROR_INVALID_ARGUMENT, "capacity is 11");
  check_error(fp8rl_rollout_copy(rollout, nullptr, logprobs.data(), -1, nullptr, nullptr), FP8RL_ERROR_INVALID_ARGUMENT,
              "capacity");
  CHECK(tokens[0] == -1);  // nothing written
  CHECK(logprobs[0] == 1.0f);
  REQUIRE(fp8rl_rollout_copy(rollout, tokens.data(), nullptr, 12, nullptr, nullptr) == FP8RL_OK);
  CHECK(tokens[0] != -1);
  fp8rl_rollout_destroy(rollout);
}
