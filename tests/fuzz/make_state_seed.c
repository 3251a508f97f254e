/* Writes the seed of the training-state harness: a state file the library
 * saves for the tiny model of tiny_model.h after one training step, so the
 * AdamW moments, step counters and seed stream are not all at their initial
 * values. Usage: fp8rl_fuzz_make_state_seed OUT.safetensors
 * (make_corpus.py then wraps it like the other seeds). */
#include <stdio.h>

#include "tiny_model.h"

static int failed(const char* call) {
  fprintf(stderr, "make_state_seed: %s: %s\n", call, fp8rl_last_error_message());
  return 1;
}

/* One policy-gradient step on two sequences of the tiny vocabulary. */
static fp8rl_status train_one_step(fp8rl_trainer* trainer) {
  static const int32_t tokens[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  static const int64_t offsets[3] = {0, 4, 8};
  static const int64_t prompt_lengths[2] = {2, 2};
  /* Advantages, not rewards: with the default group size 1 a reward's
   * advantage is 0, and the moments would stay 0. */
  static const float advantages[2] = {1.0f, -1.0f};
  fp8rl_train_batch batch;
  fp8rl_train_metrics metrics;
  fp8rl_status status = fp8rl_train_batch_init(&batch);
  if (status == FP8RL_OK) status = fp8rl_train_metrics_init(&metrics);
  if (status != FP8RL_OK) return status;
  batch.tokens = tokens;
  batch.offsets = offsets;
  batch.num_sequences = 2;
  batch.prompt_lengths = prompt_lengths;
  batch.num_completion_tokens = 4;
  batch.advantages = advantages;
  return fp8rl_trainer_step(trainer, &batch, &metrics);
}

int main(int argc, char** argv) {
  fp8rl_context_options context_options;
  fp8rl_context* context = NULL;
  fp8rl_model_config config;
  fp8rl_policy* policy = NULL;
  fp8rl_trainer_options options;
  fp8rl_trainer* trainer = NULL;
  int status = 0;
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT.safetensors\n", argv[0]);
    return 2;
  }
  fp8rl_context_options_init(&context_options);
  context_options.backend = FP8RL_BACKEND_CPU;
  context_options.num_threads = 1;
  if (fp8rl_context_create(&context_options, &context) != FP8RL_OK) return failed("fp8rl_context_create");
  if (fp8rl_fuzz_tiny_config(&config) != FP8RL_OK ||
      fp8rl_policy_create_random(context, &config, FP8RL_FUZZ_TINY_SEED, &policy) != FP8RL_OK) {
    status = failed("fp8rl_policy_create_random");
  } else if (fp8rl_trainer_options_init(&options) != FP8RL_OK ||
             fp8rl_trainer_create(policy, &options, &trainer) != FP8RL_OK) {
    status = failed("fp8rl_trainer_create");
  } else if (train_one_step(trainer) != FP8RL_OK) {
    status = failed("fp8rl_trainer_step");
  } else if (fp8rl_trainer_save_state(trainer, argv[1]) != FP8RL_OK) {
    status = failed("fp8rl_trainer_save_state");
  }
  fp8rl_trainer_destroy(trainer);
  fp8rl_policy_destroy(policy);
  fp8rl_context_destroy(context);
  return status;
}
