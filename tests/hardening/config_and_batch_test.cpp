// Configs and batches that used to pass validation and fail later with an
// unrelated message: an odd head_dim, sizes past the documented limits, and a
// training batch without a single completion token.
#include <string>

#include "capi/capi_policy_fixture.h"
#include "hardening/hardening_support.h"

namespace hardening_test {
namespace {

Outcome create_random(fp8rl_context* context, const fp8rl_model_config& config) {
  fp8rl_policy* policy = nullptr;
  const Outcome outcome = outcome_of(fp8rl_policy_create_random(context, &config, 1, &policy));
  fp8rl_policy_destroy(policy);
  return outcome;
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("configs: an odd head_dim is refused at validation, in code and in config.json") {
  CpuContext context;
  fp8rl_model_config config = capi_test::qwen3_config();
  config.head_dim = 5;
  const Outcome in_code = create_random(context.get(), config);
  CHECK(in_code.status == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(in_code.message, "head_dim must be even, got 5"), in_code.message);

  TempDir dir;
  write_bytes(dir.file("config.json"), llama_config_json(1, 64, 32, 4, ", \"head_dim\": 7"));
  write_bytes(dir.file("model.safetensors"), safetensors_bytes("{}"));
  fp8rl_policy* policy = nullptr;
  const Outcome from_file = outcome_of(fp8rl_policy_load(context.get(), dir.path().c_str(), &policy));
  CHECK(from_file.status == FP8RL_ERROR_CORRUPT_DATA);
  CHECK_MESSAGE(contains(from_file.message, "config.json: head_dim must be even, got 7"), from_file.message);
  CHECK(policy == nullptr);
}

TEST_CASE("configs: each size above its documented limit is refused, naming the field and the limit") {
  CpuContext context;
  struct Case {
    const char* field;
    int64_t fp8rl_model_config::*member;
    int64_t limit;
  };
  const Case cases[] = {
      {"num_hidden_layers", &fp8rl_model_config::num_layers, 1024},
      {"vocab_size", &fp8rl_model_config::vocab_size, int64_t{1} << 24},
      {"hidden_size", &fp8rl_model_config::hidden_size, int64_t{1} << 16},
      {"intermediate_size", &fp8rl_model_config::intermediate_size, int64_t{1} << 20},
      {"max_position_embeddings", &fp8rl_model_config::max_position_embeddings, int64_t{1} << 24},
  };
  for (const Case& c : cases) {
    CAPTURE(c.field);
    fp8rl_model_config config = capi_test::rl_loop_config();
    config.*c.member = c.limit + 1;
    const Outcome outcome = create_random(context.get(), config);
    CHECK(outcome.status == FP8RL_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE(contains(outcome.message, std::string(c.field) + " is " + std::to_string(c.limit + 1) +
                                                ", above this library's limit of " + std::to_string(c.limit)),
                  outcome.message);
  }
}

TEST_CASE("train batch: sequences without a completion token are refused with a message that says so") {
  CpuContext context;
  capi_test::Policy policy(context.get(), capi_test::rl_loop_config());
  fp8rl_trainer_options options;
  REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
  options.group_size = 2;
  fp8rl_trainer* trainer = nullptr;
  REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);

  const std::vector<int32_t> tokens = {3, 4, 5, 6, 7};
  const std::vector<int64_t> offsets = {0, 2, 5};
  const std::vector<int64_t> prompt_lengths = {2, 3};  // every token is prompt
  const std::vector<float> rewards = {1.0f, 0.0f};
  fp8rl_train_batch batch;
  REQUIRE(fp8rl_train_batch_init(&batch) == FP8RL_OK);
  batch.tokens = tokens.data();
  batch.offsets = offsets.data();
  batch.num_sequences = 2;
  batch.prompt_lengths = prompt_lengths.data();
  batch.num_completion_tokens = 0;
  batch.rewards = rewards.data();
  fp8rl_train_metrics metrics;
  REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
  const Outcome outcome = outcome_of(fp8rl_trainer_step(trainer, &batch, &metrics));
  CHECK(outcome.status == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(outcome.message, "no sequence has a completion token"), outcome.message);
  fp8rl_trainer_destroy(trainer);
}

}  // namespace hardening_test
