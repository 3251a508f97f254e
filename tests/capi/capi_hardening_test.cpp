// Regression tests of issue 16 ("Hardening"): arguments the header says are
// INVALID_ARGUMENT but that were accepted, refused too late, or reported as a
// bug in fp8rl. Enum values out of range are in bad_input_table_test.cpp.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "capi/capi_policy_fixture.h"

namespace capi_test {
namespace {

fp8rl_trainer_options sft_options() {
  fp8rl_trainer_options options;
  REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
  options.loss = FP8RL_LOSS_CROSS_ENTROPY;
  options.learning_rate = 1e-3;
  return options;
}

// Two sequences of the rl_loop model: prompt 2 tokens, completion 2 tokens.
struct TinyBatch {
  std::vector<int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int64_t> offsets{0, 4, 8};
  std::vector<int64_t> prompt_lengths{2, 2};
  std::vector<float> per_sequence{1.0f, 0.0f};

  fp8rl_train_batch batch() const {
    fp8rl_train_batch b;
    REQUIRE(fp8rl_train_batch_init(&b) == FP8RL_OK);
    b.tokens = tokens.data();
    b.offsets = offsets.data();
    b.num_sequences = 2;
    b.prompt_lengths = prompt_lengths.data();
    b.num_completion_tokens = 4;
    return b;
  }
};

std::vector<float> logprobs_of(fp8rl_trainer* trainer, const TinyBatch& data) {
  std::vector<float> logprobs(4);
  REQUIRE(fp8rl_trainer_recompute_logprobs(trainer, data.tokens.data(), data.offsets.data(), 2,
                                           data.prompt_lengths.data(), logprobs.data(), 4) == FP8RL_OK);
  return logprobs;
}

}  // namespace

TEST_CASE("the cross-entropy loss refuses rewards and advantages, changing nothing") {
  CpuContext context;
  Policy policy(context.get(), rl_loop_config());
  fp8rl_trainer* trainer = nullptr;
  const fp8rl_trainer_options options = sft_options();
  REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);
  const TinyBatch data;
  const std::vector<float> before = logprobs_of(trainer, data);
  for (const char* field : {"rewards", "advantages"}) {
    CAPTURE(field);
    fp8rl_train_batch batch = data.batch();
    (std::string(field) == "rewards" ? batch.rewards : batch.advantages) = data.per_sequence.data();
    fp8rl_train_metrics metrics;
    REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
    check_error(fp8rl_trainer_step(trainer, &batch, &metrics), FP8RL_ERROR_INVALID_ARGUMENT,
                (std::string("batch->") + field).c_str());
    check_error(fp8rl_trainer_iterate(trainer, &batch, &metrics, nullptr, 0), FP8RL_ERROR_INVALID_ARGUMENT,
                (std::string("batch->") + field).c_str());
    CHECK(metrics.step == 0);
  }
  CHECK(same_bits(logprobs_of(trainer, data), before));
  // The same batch without them trains.
  const fp8rl_train_batch batch = data.batch();
  fp8rl_train_metrics metrics;
  REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
  CHECK_MESSAGE(fp8rl_trainer_step(trainer, &batch, &metrics) == FP8RL_OK, std::string(fp8rl_last_error_message()));
  CHECK(metrics.step == 1);
  fp8rl_trainer_destroy(trainer);
}

TEST_CASE("fp8rl_trainer_create refuses a negative or non-finite advantage_epsilon, naming it") {
  CpuContext context;
  Policy policy(context.get(), rl_loop_config());
  for (const double epsilon : {-1e-6, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    CAPTURE(epsilon);
    fp8rl_trainer_options options;
    REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
    options.advantage_epsilon = epsilon;
    fp8rl_trainer* trainer = nullptr;
    check_error(fp8rl_trainer_create(policy.get(), &options, &trainer), FP8RL_ERROR_INVALID_ARGUMENT,
                "advantage_epsilon");
    CHECK(trainer == nullptr);
    fp8rl_trainer_destroy(trainer);  // NULL once refused
  }
}

TEST_CASE("fp8rl_trainer_next_seeds refuses a count above its limit as an argument error naming count") {
  CpuContext context;
  Policy policy(context.get(), rl_loop_config());
  fp8rl_trainer_options options;
  REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
  fp8rl_trainer* trainer = nullptr;
  REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);
  uint64_t seeds[2] = {0, 0};
  const int64_t limit = INT32_MAX;  // documented in fp8rl_trainer_next_seeds()
  for (const int64_t count : {limit + 1, std::numeric_limits<int64_t>::max() / 8 + 1,
                              std::numeric_limits<int64_t>::max()}) {
    CAPTURE(count);
    check_error(fp8rl_trainer_next_seeds(trainer, count, seeds), FP8RL_ERROR_INVALID_ARGUMENT, "count");
    CHECK(seeds[0] == 0);
  }
  // The stream did not move: the next seeds are a fresh trainer's first.
  uint64_t after[2] = {0, 0};
  REQUIRE(fp8rl_trainer_next_seeds(trainer, 2, after) == FP8RL_OK);
  fp8rl_trainer_destroy(trainer);
  REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);
  uint64_t fresh[2] = {0, 0};
  REQUIRE(fp8rl_trainer_next_seeds(trainer, 2, fresh) == FP8RL_OK);
  CHECK(after[0] == fresh[0]);
  CHECK(after[1] == fresh[1]);
  fp8rl_trainer_destroy(trainer);
}

}  // namespace capi_test
