/* A whole RL loop through the C API in about a hundred lines: a tiny random
 * policy learns, by GRPO, to answer every prompt with the token 7. The host
 * owns the environment: it draws prompts, scores completions (reward = the
 * fraction of completion tokens equal to 7) and hands rewards to the trainer,
 * which recomputes log-probs, takes an optimizer step in FP8 and recalibrates.
 * Prints one line per step; exits 1 if the mean reward did not rise.
 * Usage: fp8rl_rl_loop [COMPLETIONS_FILE]: also writes every completion, one
 * line of token ids each, step after step (the Python binding's test replays
 * this loop and compares). */
#include <fp8rl/fp8rl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    if ((call) != FP8RL_OK) {                                                \
      fprintf(stderr, "%s failed: %s\n", #call, fp8rl_last_error_message()); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

enum { PROMPTS = 4, GROUP = 4, SEQS = PROMPTS * GROUP, PROMPT_LEN = 4, NEW = 6, STEPS = 20, TARGET = 7 };

int main(int argc, char** argv) {
  FILE* completions_file = argc > 1 ? fopen(argv[1], "w") : NULL;
  if (argc > 1 && !completions_file) {
    perror(argv[1]);
    return 1;
  }
  fp8rl_context_options context_options;
  fp8rl_context* context;
  CHECK(fp8rl_context_options_init(&context_options));
  context_options.backend = FP8RL_BACKEND_CPU;
  CHECK(fp8rl_context_create(&context_options, &context));

  fp8rl_model_config config; /* a tiny Llama */
  CHECK(fp8rl_model_config_init(&config));
  config.vocab_size = 32;
  config.hidden_size = 64;
  config.num_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.intermediate_size = 128;
  config.max_position_embeddings = 32;
  fp8rl_policy* policy;
  CHECK(fp8rl_policy_create_random(context, &config, 1, &policy));
  fp8rl_recipe recipe; /* FP8 linear layers, KV cache and attention */
  CHECK(fp8rl_recipe_init(&recipe));
  recipe.linear = recipe.kv_cache = recipe.attention = FP8RL_PRECISION_FP8;
  CHECK(fp8rl_policy_set_recipe(policy, &recipe));

  fp8rl_trainer_options options;
  fp8rl_trainer* trainer;
  CHECK(fp8rl_trainer_options_init(&options));
  options.learning_rate = 1e-2;
  options.group_size = GROUP;
  options.importance.mode = FP8RL_IMPORTANCE_TRUNCATED;
  CHECK(fp8rl_trainer_create(policy, &options, &trainer));
  fp8rl_sampling_options sampling;
  CHECK(fp8rl_sampling_options_init(&sampling));
  sampling.max_new_tokens = NEW;
  sampling.stop_at_eos = 0;

  double first_reward = 0.0, last_reward = 0.0;
  for (int step = 0; step < STEPS; ++step) {
    int32_t prompts[SEQS * PROMPT_LEN], tokens[SEQS * (PROMPT_LEN + NEW)];
    int64_t prompt_offsets[SEQS + 1], offsets[SEQS + 1], prompt_lengths[SEQS], completion_offsets[SEQS + 1];
    uint64_t seeds[SEQS];
    float logprobs[SEQS * NEW], rewards[SEQS];
    for (int i = 0; i < SEQS; ++i) { /* GROUP copies of each prompt */
      for (int j = 0; j < PROMPT_LEN; ++j) prompts[i * PROMPT_LEN + j] = 8 + (step * 5 + (i / GROUP) * 3 + j) % 24;
      prompt_offsets[i] = i * PROMPT_LEN;
      prompt_lengths[i] = PROMPT_LEN;
    }
    prompt_offsets[SEQS] = SEQS * PROMPT_LEN;
    CHECK(fp8rl_trainer_next_seeds(trainer, SEQS, seeds));
    fp8rl_rollout* rollout;
    CHECK(fp8rl_policy_generate(policy, prompts, prompt_offsets, SEQS, seeds, &sampling, &rollout));
    int32_t completions[SEQS * NEW];
    CHECK(fp8rl_rollout_copy(rollout, completions, logprobs, SEQS * NEW, completion_offsets, NULL));
    fp8rl_train_batch batch;
    CHECK(fp8rl_train_batch_init(&batch));
    CHECK(fp8rl_rollout_seconds(rollout, &batch.generation_seconds));
    CHECK(fp8rl_rollout_destroy(rollout));

    double reward_sum = 0.0;
    int64_t n = 0;
    for (int i = 0; i < SEQS; ++i) { /* prompt + completion, and the reward */
      offsets[i] = n;
      for (int j = 0; j < PROMPT_LEN; ++j) tokens[n++] = prompts[i * PROMPT_LEN + j];
      int hits = 0, length = (int)(completion_offsets[i + 1] - completion_offsets[i]);
      for (int j = 0; j < length; ++j) {
        tokens[n++] = completions[completion_offsets[i] + j];
        hits += completions[completion_offsets[i] + j] == TARGET;
      }
      rewards[i] = length > 0 ? (float)hits / (float)length : 0.0f;
      for (int j = 0; completions_file && j < length; ++j)
        fprintf(completions_file, j + 1 < length ? "%d " : "%d\n", completions[completion_offsets[i] + j]);
      reward_sum += rewards[i];
    }
    offsets[SEQS] = n;
    batch.tokens = tokens;
    batch.offsets = offsets;
    batch.num_sequences = SEQS;
    batch.prompt_lengths = prompt_lengths;
    batch.num_completion_tokens = completion_offsets[SEQS];
    batch.logp_gen = logprobs;
    batch.rewards = rewards;
    fp8rl_train_metrics metrics;
    CHECK(fp8rl_train_metrics_init(&metrics));
    CHECK(fp8rl_trainer_step(trainer, &batch, &metrics));
    printf("step %2d  reward %.3f  grad norm %.3f  token_mult_prob_error %.6f  recalibration %.1f%%\n", step,
           reward_sum / SEQS, metrics.grad_norm, metrics.token_mult_prob_error, 100.0 * metrics.recalibration_fraction);
    if (step == 0) first_reward = reward_sum / SEQS;
    last_reward = reward_sum / SEQS;
  }
  CHECK(fp8rl_trainer_destroy(trainer));
  CHECK(fp8rl_policy_destroy(policy));
  CHECK(fp8rl_context_destroy(context));
  if (completions_file) fclose(completions_file);
  printf("mean reward %.3f -> %.3f\n", first_reward, last_reward);
  return last_reward > first_reward + 0.3 ? 0 : 1;
}
