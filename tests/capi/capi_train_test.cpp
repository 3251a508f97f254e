// The training functions of the C API: a whole RL loop through the public
// header, state save and resume, and the error paths.
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "capi/capi_policy_fixture.h"

namespace capi_test {
namespace {

// A trainer destroyed at scope exit (before its policy, declared earlier).
class Trainer {
 public:
  Trainer(fp8rl_policy* policy, const fp8rl_trainer_options& options) {
    REQUIRE_MESSAGE(fp8rl_trainer_create(policy, &options, &trainer_) == FP8RL_OK,
                    std::string(fp8rl_last_error_message()));
  }
  ~Trainer() { fp8rl_trainer_destroy(trainer_); }
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;
  fp8rl_trainer* get() const { return trainer_; }

 private:
  fp8rl_trainer* trainer_ = nullptr;
};

fp8rl_trainer_options grpo_options() {
  fp8rl_trainer_options options;
  REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
  options.learning_rate = 1e-3;
  options.group_size = 2;
  options.importance.mode = FP8RL_IMPORTANCE_TRUNCATED;
  options.micro_batch_tokens = 24;
  return options;
}

// Prompts and completions of one RL step, in the layout fp8rl_train_batch takes.
struct StepData {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> prompt_lengths;
  std::vector<float> logp_gen;
  std::vector<float> rewards;
  double generation_seconds = 0.0;

  fp8rl_train_batch batch() const {
    fp8rl_train_batch b;
    REQUIRE(fp8rl_train_batch_init(&b) == FP8RL_OK);
    b.tokens = tokens.data();
    b.offsets = offsets.data();
    b.num_sequences = static_cast<int64_t>(prompt_lengths.size());
    b.prompt_lengths = prompt_lengths.data();
    b.num_completion_tokens = static_cast<int64_t>(logp_gen.size());
    b.logp_gen = logp_gen.data();
    b.rewards = rewards.data();
    b.generation_seconds = generation_seconds;
    return b;
  }
};

// Two completions of each of three prompts, seeds from the trainer; reward:
// the fraction of even completion tokens.
StepData rollout_step(fp8rl_policy* policy, fp8rl_trainer* trainer) {
  Prompts prompts;
  std::vector<uint64_t> seeds(6);
  REQUIRE(fp8rl_trainer_next_seeds(trainer, 6, seeds.data()) == FP8RL_OK);
  for (uint32_t i = 0; i < 6; ++i) prompts.add(make_prompt(2 + i / 2 * 3, i / 2), seeds[i]);
  fp8rl_rollout* rollout = nullptr;
  const fp8rl_sampling_options options = sampling(1.0f, 8);
  REQUIRE(fp8rl_policy_generate(policy, prompts.tokens.data(), prompts.offsets.data(), prompts.count(),
                                prompts.seeds.data(), &options, &rollout) == FP8RL_OK);
  StepData step;
  REQUIRE(fp8rl_rollout_seconds(rollout, &step.generation_seconds) == FP8RL_OK);
  const std::vector<Completion> completions = read_rollout(rollout);
  fp8rl_rollout_destroy(rollout);
  for (size_t i = 0; i < completions.size(); ++i) {
    const auto begin = prompts.tokens.begin() + prompts.offsets[i];
    const auto end = prompts.tokens.begin() + prompts.offsets[i + 1];
    step.tokens.insert(step.tokens.end(), begin, end);
    step.prompt_lengths.push_back(end - begin);
    step.tokens.insert(step.tokens.end(), completions[i].tokens.begin(), completions[i].tokens.end());
    step.offsets.push_back(static_cast<int64_t>(step.tokens.size()));
    step.logp_gen.insert(step.logp_gen.end(), completions[i].logprobs.begin(), completions[i].logprobs.end());
    int64_t even = 0;
    for (int32_t t : completions[i].tokens) even += t % 2 == 0 ? 1 : 0;
    step.rewards.push_back(static_cast<float>(even) / static_cast<float>(completions[i].tokens.size()));
  }
  return step;
}

fp8rl_train_metrics train(fp8rl_trainer* trainer, const StepData& step) {
  fp8rl_train_metrics metrics;
  REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
  const fp8rl_train_batch batch = step.batch();
  REQUIRE_MESSAGE(fp8rl_trainer_step(trainer, &batch, &metrics) == FP8RL_OK, std::string(fp8rl_last_error_message()));
  return metrics;
}

std::vector<float> scales_of(fp8rl_policy* policy, int64_t layers) {
  std::vector<float> q(static_cast<size_t>(layers)), k(q), v(q);
  REQUIRE(fp8rl_policy_get_attention_scales(policy, q.data(), k.data(), v.data(), layers) == FP8RL_OK);
  q.insert(q.end(), k.begin(), k.end());
  q.insert(q.end(), v.begin(), v.end());
  return q;
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("fp8rl_capi_train_") + name)).string();
}

}  // namespace

TEST_CASE("an RL loop through the C API: consistent log-probs, recalibration, metrics") {
  CpuContext context;
  Policy policy(context.get(), qwen3_config());
  policy.set_recipe(fp8_everything_recipe());
  Trainer trainer(policy.get(), grpo_options());
  const std::vector<float> scales_before = scales_of(policy.get(), 3);
  for (int s = 0; s < 2; ++s) {
    const StepData step = rollout_step(policy.get(), trainer.get());
    const fp8rl_train_metrics m = train(trainer.get(), step);
    CHECK(m.step == s + 1);
    CHECK(m.skipped == 0);
    REQUIRE(m.has_mismatch == 1);
    CHECK(m.token_mult_prob_error == 1.0);  // one engine, one recipe: bitwise equal log-probs
    CHECK(m.gen_kl_error == 0.0);
    CHECK(m.is_weight_mean == 1.0);
    CHECK(m.completion_tokens == static_cast<int64_t>(step.logp_gen.size()));
    CHECK(m.generation_seconds == step.generation_seconds);
    CHECK(m.generation_seconds > 0.0);
    CHECK(m.train_seconds > 0.0);
    CHECK(m.recalibration_seconds > 0.0);
    const double total = m.generation_seconds + m.recompute_seconds + m.train_seconds + m.recalibration_seconds;
    CHECK(m.recalibration_fraction == doctest::Approx(m.recalibration_seconds / total));
    CHECK(std::isfinite(m.loss));
    CHECK(m.grad_norm > 0.0);
    CHECK(m.entropy > 0.0);
    CHECK(m.tokens_per_second > 0.0);
  }
  CHECK(scales_of(policy.get(), 3) != scales_before);

  // Recomputed log-probs equal fp8rl_policy_score at the training temperature.
  const StepData step = rollout_step(policy.get(), trainer.get());
  std::vector<float> recomputed(step.logp_gen.size()), scored(step.logp_gen.size());
  REQUIRE(fp8rl_trainer_recompute_logprobs(trainer.get(), step.tokens.data(), step.offsets.data(), 6,
                                           step.prompt_lengths.data(), recomputed.data(),
                                           static_cast<int64_t>(recomputed.size())) == FP8RL_OK);
  const fp8rl_sampling_options options = sampling(1.0f, 8);
  REQUIRE(fp8rl_policy_score(policy.get(), step.tokens.data(), step.offsets.data(), 6, step.prompt_lengths.data(),
                             &options, scored.data(), static_cast<int64_t>(scored.size())) == FP8RL_OK);
  CHECK(same_bits(recomputed, scored));
  CHECK(same_bits(recomputed, step.logp_gen));
}

TEST_CASE("a saved training state resumes bit for bit through the C API") {
  const std::string path = temp_path("state.safetensors");
  CpuContext context;
  Policy first(context.get(), qwen2_config());
  first.set_recipe(fp8_everything_recipe());
  Trainer a(first.get(), grpo_options());
  train(a.get(), rollout_step(first.get(), a.get()));
  REQUIRE(fp8rl_trainer_save_state(a.get(), path.c_str()) == FP8RL_OK);
  const fp8rl_train_metrics expected = train(a.get(), rollout_step(first.get(), a.get()));

  Policy second(context.get(), qwen2_config(), 99);
  Trainer b(second.get(), grpo_options());
  REQUIRE_MESSAGE(fp8rl_trainer_load_state(b.get(), path.c_str()) == FP8RL_OK, std::string(fp8rl_last_error_message()));
  fp8rl_recipe recipe = default_recipe();
  REQUIRE(fp8rl_policy_get_recipe(second.get(), &recipe) == FP8RL_OK);
  CHECK(recipe.attention == FP8RL_PRECISION_FP8);
  const fp8rl_train_metrics got = train(b.get(), rollout_step(second.get(), b.get()));
  CHECK(got.step == expected.step);
  CHECK(got.loss == expected.loss);
  CHECK(got.grad_norm == expected.grad_norm);
  CHECK(got.reward_mean == expected.reward_mean);
  CHECK(scales_of(second.get(), 2) == scales_of(first.get(), 2));
  std::filesystem::remove(path);
}

TEST_CASE("trainer options embed the importance and calibration options: one default each, struct_size rules") {
  fp8rl_trainer_options options;
  REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
  fp8rl_importance_options importance;
  REQUIRE(fp8rl_importance_options_init(&importance) == FP8RL_OK);
  fp8rl_calibration_options calibration;
  REQUIRE(fp8rl_calibration_options_init(&calibration) == FP8RL_OK);
  CHECK(options.importance.struct_size == sizeof(fp8rl_importance_options));
  CHECK(options.importance.mode == importance.mode);
  CHECK(options.importance.mode == FP8RL_IMPORTANCE_OFF);
  CHECK(options.importance.low == importance.low);
  CHECK(options.importance.high == importance.high);
  CHECK(options.calibration.struct_size == sizeof(fp8rl_calibration_options));
  CHECK(options.calibration.percentile == calibration.percentile);
  CHECK(options.calibration.margin == calibration.margin);
  CHECK(options.calibration.max_value == calibration.max_value);

  CpuContext context;
  Policy policy(context.get(), llama_config());
  fp8rl_trainer* trainer = nullptr;
  // An embedded struct is checked on its own struct_size, like a top-level one.
  options = grpo_options();
  options.importance.struct_size = 0;
  check_error(fp8rl_trainer_create(policy.get(), &options, &trainer), FP8RL_ERROR_VERSION_MISMATCH,
              "options->importance.struct_size is 0");
  options = grpo_options();
  options.calibration.struct_size = sizeof(fp8rl_calibration_options) + 8;
  check_error(fp8rl_trainer_create(policy.get(), &options, &trainer), FP8RL_ERROR_VERSION_MISMATCH,
              "options->calibration.struct_size");
  CHECK(trainer == nullptr);
  // A shorter embedded struct (an older header) keeps the defaults of the fields it lacks.
  options = grpo_options();
  options.importance.low = 0.5;
  options.importance.high = -1.0;
  check_error(fp8rl_trainer_create(policy.get(), &options, &trainer), FP8RL_ERROR_INVALID_ARGUMENT, "high");
  options.importance.struct_size = static_cast<uint32_t>(offsetof(fp8rl_importance_options, high));
  { Trainer older(policy.get(), options); }  // high is the default, 2
  // An outer struct that ends before an embedded one gives it the defaults, whole.
  options = grpo_options();
  options.calibration.struct_size = 0;
  options.calibration.percentile = -1.0;
  options.struct_size = static_cast<uint32_t>(offsetof(fp8rl_trainer_options, calibration));
  { Trainer older(policy.get(), options); }
}

TEST_CASE("training functions refuse bad input with a message and change nothing") {
  CpuContext context;
  Policy policy(context.get(), llama_config());
  fp8rl_trainer_options options = grpo_options();
  fp8rl_trainer* trainer = nullptr;

  options.importance.mode = static_cast<fp8rl_importance_mode>(9);
  check_error(fp8rl_trainer_create(policy.get(), &options, &trainer), FP8RL_ERROR_INVALID_ARGUMENT, "importance.mode");
  options = grpo_options();
  options.temperature = 0.0f;
  check_error(fp8rl_trainer_create(policy.get(), &options, &trainer), FP8RL_ERROR_INVALID_ARGUMENT, "temperature");
  options = grpo_options();
  options.struct_size = 3;
  check_error(fp8rl_trainer_create(policy.get(), &options, &trainer), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");
  check_error(fp8rl_trainer_create(nullptr, &options, &trainer), FP8RL_ERROR_INVALID_ARGUMENT, "policy is NULL");
  CHECK(trainer == nullptr);

  Trainer live(policy.get(), grpo_options());
  check_error(fp8rl_policy_destroy(policy.get()), FP8RL_ERROR_INVALID_ARGUMENT, "trainer uses this policy");

  const StepData step = rollout_step(policy.get(), live.get());
  fp8rl_train_metrics metrics;
  REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
  fp8rl_train_batch batch = step.batch();
  batch.num_completion_tokens += 1;
  check_error(fp8rl_trainer_step(live.get(), &batch, &metrics), FP8RL_ERROR_INVALID_ARGUMENT, "num_completion_tokens");
  batch = step.batch();
  batch.logp_gen = nullptr;
  check_error(fp8rl_trainer_step(live.get(), &batch, &metrics), FP8RL_ERROR_INVALID_ARGUMENT, "logp_gen");
  batch = step.batch();
  std::vector<float> bad_rewards = step.rewards;
  bad_rewards[2] = NAN;
  batch.rewards = bad_rewards.data();
  check_error(fp8rl_trainer_step(live.get(), &batch, &metrics), FP8RL_ERROR_NON_FINITE, "reward");
  check_error(fp8rl_trainer_step(nullptr, &batch, &metrics), FP8RL_ERROR_INVALID_ARGUMENT, "trainer is NULL");
  check_error(fp8rl_trainer_step(live.get(), nullptr, &metrics), FP8RL_ERROR_INVALID_ARGUMENT, "batch is NULL");
  check_error(fp8rl_trainer_next_seeds(live.get(), -1, nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "count");

  // A corrupt state file leaves the trainer as it was: the next step matches a twin's.
  const std::string path = temp_path("corrupt.safetensors");
  {
    std::ofstream file(path, std::ios::binary);
    file << "definitely not a safetensors file";
  }
  check_error(fp8rl_trainer_load_state(live.get(), path.c_str()), FP8RL_ERROR_CORRUPT_DATA, path.c_str());
  check_error(fp8rl_trainer_load_state(live.get(), temp_path("missing").c_str()), FP8RL_ERROR_IO, "missing");
  Policy twin_policy(context.get(), llama_config());
  Trainer twin(twin_policy.get(), grpo_options());
  const StepData twin_step = rollout_step(twin_policy.get(), twin.get());
  CHECK(train(live.get(), step).loss == train(twin.get(), twin_step).loss);
  std::filesystem::remove(path);
}

}  // namespace capi_test

namespace capi_test {

TEST_CASE("copying weights into a generator of another recipe, and memory reports") {
  CpuContext context;
  Policy learner(context.get(), llama_config(), 1);  // BF16 training
  Policy generator(context.get(), llama_config(), 2);
  generator.set_recipe(fp8_everything_recipe());
  Trainer trainer(learner.get(), grpo_options());
  train(trainer.get(), rollout_step(learner.get(), trainer.get()));

  REQUIRE(fp8rl_policy_copy_weights(generator.get(), learner.get()) == FP8RL_OK);
  fp8rl_recipe recipe = default_recipe();
  REQUIRE(fp8rl_policy_get_recipe(generator.get(), &recipe) == FP8RL_OK);
  CHECK(recipe.linear == FP8RL_PRECISION_FP8);  // the generator keeps its recipe
  CHECK(scales_of(generator.get(), 2) == scales_of(learner.get(), 2));
  // Under the learner's recipe the copy scores exactly as the learner does.
  const StepData step = rollout_step(generator.get(), trainer.get());
  const fp8rl_sampling_options options = sampling(1.0f, 8);
  std::vector<float> by_learner(step.logp_gen.size()), by_copy(step.logp_gen.size());
  const auto score = [&](fp8rl_policy* policy, std::vector<float>& out) {
    REQUIRE(fp8rl_policy_score(policy, step.tokens.data(), step.offsets.data(), 6, step.prompt_lengths.data(), &options,
                               out.data(), static_cast<int64_t>(out.size())) == FP8RL_OK);
  };
  score(learner.get(), by_learner);
  generator.set_recipe(default_recipe());
  score(generator.get(), by_copy);
  CHECK(same_bits(by_learner, by_copy));

  Policy other_model(context.get(), qwen3_config());
  check_error(fp8rl_policy_copy_weights(other_model.get(), learner.get()), FP8RL_ERROR_INVALID_ARGUMENT,
              "another model");
  check_error(fp8rl_policy_copy_weights(learner.get(), learner.get()), FP8RL_ERROR_INVALID_ARGUMENT, "same policy");
  check_error(fp8rl_policy_copy_weights(nullptr, learner.get()), FP8RL_ERROR_INVALID_ARGUMENT, "NULL");

  int64_t parameters = 0;
  REQUIRE(fp8rl_policy_parameter_count(learner.get(), &parameters) == FP8RL_OK);
  fp8rl_memory_report bf16_report, fp8_report, trainer_report;
  REQUIRE(fp8rl_memory_report_init(&bf16_report) == FP8RL_OK);
  REQUIRE(fp8rl_memory_report_init(&fp8_report) == FP8RL_OK);
  REQUIRE(fp8rl_memory_report_init(&trainer_report) == FP8RL_OK);
  REQUIRE(fp8rl_policy_memory(learner.get(), &bf16_report) == FP8RL_OK);
  generator.set_recipe(fp8_everything_recipe());
  REQUIRE(fp8rl_policy_memory(generator.get(), &fp8_report) == FP8RL_OK);
  REQUIRE(fp8rl_trainer_memory(trainer.get(), &trainer_report) == FP8RL_OK);
  CHECK(bf16_report.master_weights == parameters * 4);
  CHECK(bf16_report.compute_weights > 0);
  CHECK(fp8_report.compute_weights < bf16_report.compute_weights);  // one byte a weight instead of two
  CHECK(bf16_report.gradients == 0);
  // The arena: one FP32 buffer per role, tensors at 128-element offsets (at
  // most 127 elements of padding each; the tiny model has fewer than 64 tensors).
  CHECK(trainer_report.gradients >= parameters * 4);
  CHECK(trainer_report.gradients < (parameters + 127 * 64) * 4);
  CHECK(trainer_report.optimizer_state == 2 * trainer_report.gradients);
  CHECK(trainer_report.master_weights == parameters * 4 + trainer_report.gradients);  // host copy and arena
  CHECK(trainer_report.backward_weights > 0);
  fp8rl_memory_report old{};
  old.struct_size = 2;
  check_error(fp8rl_policy_memory(learner.get(), &old), FP8RL_ERROR_VERSION_MISMATCH, "struct_size");
}

// What the _init function of each struct the library fills leaves in it: struct_size and zeros.
template <class Struct>
void check_zeroed_with_size(fp8rl_status (*init)(Struct*), const char* name) {
  CAPTURE(name);
  Struct value;
  std::memset(&value, 0xAB, sizeof(value));
  REQUIRE(init(&value) == FP8RL_OK);
  CHECK(value.struct_size == sizeof(Struct));
  Struct zero;
  std::memset(&zero, 0, sizeof(Struct));
  zero.struct_size = sizeof(Struct);
  CHECK(std::memcmp(&value, &zero, sizeof(Struct)) == 0);
  check_error(init(nullptr), FP8RL_ERROR_INVALID_ARGUMENT, "NULL");
}

TEST_CASE("the output structs' _init functions set struct_size and zero the rest") {
  check_zeroed_with_size(fp8rl_train_metrics_init, "fp8rl_train_metrics");
  check_zeroed_with_size(fp8rl_memory_report_init, "fp8rl_memory_report");
  check_zeroed_with_size(fp8rl_mismatch_metrics_init, "fp8rl_mismatch_metrics");
}

}  // namespace capi_test

namespace capi_test {

fp8rl_train_metrics sized_metrics() {
  fp8rl_train_metrics metrics;
  REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
  return metrics;
}

TEST_CASE("a training iteration of three mini-batches through the C API") {
  CpuContext context;
  Policy policy(context.get(), llama_config());
  fp8rl_trainer_options options = grpo_options();
  options.minibatches = 3;
  options.learning_rate = 3e-2;
  Trainer trainer(policy.get(), options);
  const StepData step = rollout_step(policy.get(), trainer.get());
  const fp8rl_train_batch batch = step.batch();

  fp8rl_train_metrics total = sized_metrics();
  std::vector<fp8rl_train_metrics> each(2, sized_metrics());
  check_error(fp8rl_trainer_iterate(trainer.get(), &batch, &total, each.data(), 2), FP8RL_ERROR_INVALID_ARGUMENT,
              "capacity is 2");
  each.resize(3, sized_metrics());
  each[2].struct_size = 3;
  check_error(fp8rl_trainer_iterate(trainer.get(), &batch, &total, each.data(), 3), FP8RL_ERROR_VERSION_MISMATCH,
              "out_minibatches[2]");
  each[2].struct_size = sizeof(fp8rl_train_metrics);
  REQUIRE_MESSAGE(fp8rl_trainer_iterate(trainer.get(), &batch, &total, each.data(), 3) == FP8RL_OK,
                  std::string(fp8rl_last_error_message()));

  CHECK(total.minibatches == 3);
  CHECK(total.step == 3);  // the refused calls took no step
  CHECK(total.sequences == 6);
  CHECK(total.has_mismatch == 1);
  CHECK(total.token_mult_prob_error == 1.0);
  CHECK(each[0].ratio_min == 1.0);
  CHECK(each[0].ratio_max == 1.0);
  CHECK(each[0].old_policy_kl == 0.0);
  for (int k = 0; k < 3; ++k) {
    CAPTURE(k);
    CHECK(each[k].step == k + 1);
    CHECK(each[k].sequences == 2);
    CHECK(each[k].minibatches == 1);
  }
  CHECK(each[2].old_policy_kl > 0.0);
  CHECK(each[2].ratio_min < each[2].ratio_max);
  CHECK(total.loss == doctest::Approx((each[0].loss + each[1].loss + each[2].loss) / 3.0));

  // The host's logp_old: a batch with more mini-batches than sequences is refused.
  fp8rl_train_batch with_old = batch;
  std::vector<float> old = step.logp_gen;
  with_old.logp_old = old.data();
  REQUIRE(fp8rl_trainer_iterate(trainer.get(), &with_old, &total, nullptr, 0) == FP8RL_OK);
  CHECK(total.step == 6);
  old[1] = INFINITY;
  check_error(fp8rl_trainer_iterate(trainer.get(), &with_old, &total, nullptr, 0), FP8RL_ERROR_NON_FINITE,
              "logp_old[1]");
  fp8rl_train_batch two = batch;
  two.num_sequences = 2;
  two.num_completion_tokens = static_cast<int64_t>(step.offsets[2] - step.prompt_lengths[0] - step.prompt_lengths[1]);
  check_error(fp8rl_trainer_iterate(trainer.get(), &two, &total, nullptr, 0), FP8RL_ERROR_INVALID_ARGUMENT,
              "minibatches is 3");
  check_error(fp8rl_trainer_iterate(trainer.get(), &batch, nullptr, nullptr, 0), FP8RL_ERROR_INVALID_ARGUMENT,
              "out_iteration");
  check_error(fp8rl_trainer_iterate(trainer.get(), &batch, &total, nullptr, 3), FP8RL_ERROR_INVALID_ARGUMENT,
              "out_minibatches");
  options.minibatches = 0;
  fp8rl_trainer* refused = nullptr;
  check_error(fp8rl_trainer_create(policy.get(), &options, &refused), FP8RL_ERROR_INVALID_ARGUMENT, "minibatches");
}

TEST_CASE("freeze_attention_scales keeps the policy's Q/K/V scales while its weights move") {
  // Powers of two that calibration would not measure: a replaced scale shows.
  const std::vector<float> q{0.5f, 0.25f, 2.0f}, k{4.0f, 0.125f, 1.0f}, v{0.0625f, 8.0f, 0.5f};
  std::vector<float> set = q;
  set.insert(set.end(), k.begin(), k.end());
  set.insert(set.end(), v.begin(), v.end());
  for (const int32_t freeze : {1, 0}) {
    CAPTURE(freeze);
    CpuContext context;
    Policy policy(context.get(), qwen3_config());
    policy.set_recipe(fp8_everything_recipe());
    REQUIRE(fp8rl_policy_set_attention_scales(policy.get(), q.data(), k.data(), v.data(), 3) == FP8RL_OK);
    fp8rl_trainer_options options = grpo_options();
    options.minibatches = 3;
    options.freeze_attention_scales = freeze;
    Trainer trainer(policy.get(), options);
    const StepData step = rollout_step(policy.get(), trainer.get());
    const fp8rl_train_batch batch = step.batch();
    fp8rl_train_metrics total = sized_metrics();
    REQUIRE_MESSAGE(fp8rl_trainer_iterate(trainer.get(), &batch, &total, nullptr, 0) == FP8RL_OK,
                    std::string(fp8rl_last_error_message()));
    CHECK(total.token_mult_prob_error == 1.0);  // frozen or not, one policy generated and learned
    CHECK((scales_of(policy.get(), 3) == set) == (freeze != 0));

    // The weights were requantized all the same: the completions score differently now.
    std::vector<float> scored(step.logp_gen.size());
    const fp8rl_sampling_options sampled = sampling(1.0f, 8);
    REQUIRE(fp8rl_policy_score(policy.get(), step.tokens.data(), step.offsets.data(), 6, step.prompt_lengths.data(),
                               &sampled, scored.data(), static_cast<int64_t>(scored.size())) == FP8RL_OK);
    CHECK_FALSE(same_bits(scored, step.logp_gen));
  }
}

}  // namespace capi_test
