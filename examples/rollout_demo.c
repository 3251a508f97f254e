/* fp8rl rollout demo: a SmolLM2-135M-shaped policy with random weights
 * generates a batch of completions under three precision recipes, through the
 * public C API only. For each recipe it reports decode speed and checks that
 * a full-sequence pass (what training runs) reproduces every recorded
 * log-prob bit for bit; it also scores the BF16 completions under each FP8
 * recipe to show how far the numerics move the token probabilities.
 * `./run demo` runs it; `rollout_demo --small` is the quick variant the tests run. */
#include <fp8rl/fp8rl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    fp8rl_status status_ = (call);                                           \
    if (status_ != FP8RL_OK) {                                               \
      fprintf(stderr, "%s failed: %s\n", #call, fp8rl_last_error_message()); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

enum { PROMPTS = 8, PROMPT_LENGTH = 24, RECIPES = 3 };

typedef struct {
  const char* name;
  fp8rl_precision linear, kv_cache, attention;
} recipe_choice;

static const recipe_choice kRecipes[RECIPES] = {
    {"BF16", FP8RL_PRECISION_BF16, FP8RL_PRECISION_BF16, FP8RL_PRECISION_BF16},
    {"FP8 linear", FP8RL_PRECISION_FP8, FP8RL_PRECISION_BF16, FP8RL_PRECISION_BF16},
    {"FP8 linear+KV+attention", FP8RL_PRECISION_FP8, FP8RL_PRECISION_FP8, FP8RL_PRECISION_FP8},
};

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void set_recipe(fp8rl_policy* policy, const recipe_choice* choice) {
  fp8rl_recipe recipe;
  fp8rl_recipe_init(&recipe);
  recipe.linear = choice->linear;
  recipe.kv_cache = choice->kv_cache;
  recipe.attention = choice->attention;
  CHECK(fp8rl_policy_set_recipe(policy, &recipe));
}

/* Prompt tokens followed by completion tokens, as one flat batch for scoring. */
typedef struct {
  int32_t* tokens;
  int64_t offsets[PROMPTS + 1];
  int64_t prompt_lengths[PROMPTS];
  float* generated_logprobs; /* [completion tokens] */
  int64_t completion_tokens;
} scored_batch;

static scored_batch join(const fp8rl_rollout* rollout, const int32_t* prompts) {
  scored_batch batch;
  CHECK(fp8rl_rollout_total_tokens(rollout, &batch.completion_tokens));
  batch.tokens = malloc(sizeof(int32_t) * (size_t)(PROMPTS * PROMPT_LENGTH + batch.completion_tokens));
  batch.generated_logprobs = malloc(sizeof(float) * (size_t)batch.completion_tokens);
  int64_t at = 0, completion_at = 0;
  batch.offsets[0] = 0;
  for (int64_t i = 0; i < PROMPTS; ++i) {
    const int32_t* tokens;
    const float* logprobs;
    int64_t length;
    CHECK(fp8rl_rollout_get(rollout, i, &tokens, &logprobs, &length, NULL));
    memcpy(batch.tokens + at, prompts + i * PROMPT_LENGTH, sizeof(int32_t) * PROMPT_LENGTH);
    memcpy(batch.tokens + at + PROMPT_LENGTH, tokens, sizeof(int32_t) * (size_t)length);
    memcpy(batch.generated_logprobs + completion_at, logprobs, sizeof(float) * (size_t)length);
    at += PROMPT_LENGTH + length;
    completion_at += length;
    batch.offsets[i + 1] = at;
    batch.prompt_lengths[i] = PROMPT_LENGTH;
  }
  return batch;
}

static float* score(fp8rl_policy* policy, const scored_batch* batch, const fp8rl_sampling_options* sampling) {
  float* logprobs = malloc(sizeof(float) * (size_t)batch->completion_tokens);
  CHECK(fp8rl_policy_score(policy, batch->tokens, batch->offsets, PROMPTS, batch->prompt_lengths, sampling, logprobs,
                           batch->completion_tokens));
  return logprobs;
}

int main(int argc, char** argv) {
  const int small = argc > 1 && strcmp(argv[1], "--small") == 0;
  fp8rl_context_options options;
  fp8rl_context_options_init(&options);
  options.backend = FP8RL_BACKEND_CPU;
  fp8rl_context* context = NULL;
  CHECK(fp8rl_context_create(&options, &context));

  fp8rl_model_config config; /* SmolLM2-135M shapes (or a tiny model with --small) */
  fp8rl_model_config_init(&config);
  config.family = FP8RL_MODEL_FAMILY_LLAMA;
  config.vocab_size = small ? 1000 : 49152;
  config.hidden_size = small ? 192 : 576;
  config.num_layers = small ? 4 : 30;
  config.num_attention_heads = small ? 3 : 9;
  config.num_key_value_heads = small ? 1 : 3;
  config.intermediate_size = small ? 512 : 1536;
  config.max_position_embeddings = 2048;
  config.rope_theta = 100000.0;
  config.tie_word_embeddings = 1;
  int64_t parameters = 0;
  CHECK(fp8rl_model_config_parameter_count(&config, &parameters));
  const char* device = NULL;
  CHECK(fp8rl_context_get_description(context, &device));
  printf("fp8rl rollout demo on %s\n", device);
  printf("policy: llama, %.1fM parameters (random weights), %d prompts of %d tokens\n\n", 1e-6 * (double)parameters,
         PROMPTS, PROMPT_LENGTH);
  fp8rl_policy* policy = NULL;
  CHECK(fp8rl_policy_create_random(context, &config, 2024, &policy));

  int32_t prompts[PROMPTS * PROMPT_LENGTH];
  int64_t offsets[PROMPTS + 1];
  uint64_t seeds[PROMPTS];
  for (int i = 0; i < PROMPTS * PROMPT_LENGTH; ++i) prompts[i] = (int32_t)((i * 7919 + 13) % config.vocab_size);
  for (int i = 0; i <= PROMPTS; ++i) offsets[i] = (int64_t)i * PROMPT_LENGTH;
  for (int i = 0; i < PROMPTS; ++i) seeds[i] = 100 + (uint64_t)i;
  fp8rl_sampling_options sampling;
  fp8rl_sampling_options_init(&sampling);
  sampling.max_new_tokens = small ? 12 : 48;
  sampling.temperature = 0.8f;
  sampling.top_p = 0.95f;
  sampling.stop_at_eos = 0;

  printf("%-24s %10s %12s %18s %22s\n", "recipe", "tokens", "tokens/s", "bitwise rescored", "mult-prob error vs BF16");
  /* The mismatch is measured on the full softmax (temperature 1, no top-k or
   * top-p): under a truncated distribution a token may have probability 0 in
   * one recipe and not in the other. */
  fp8rl_sampling_options plain;
  fp8rl_sampling_options_init(&plain);
  scored_batch bf16_batch = {0};
  float* bf16_plain = NULL;
  for (int r = 0; r < RECIPES; ++r) {
    set_recipe(policy, &kRecipes[r]);
    fp8rl_rollout* rollout = NULL;
    /* One untimed prompt first: the first call sizes the policy's workspaces. */
    CHECK(fp8rl_policy_generate(policy, prompts, offsets, 1, seeds, &sampling, &rollout));
    CHECK(fp8rl_rollout_destroy(rollout));
    const double start = now_seconds();
    CHECK(fp8rl_policy_generate(policy, prompts, offsets, PROMPTS, seeds, &sampling, &rollout));
    const double seconds = now_seconds() - start;
    scored_batch batch = join(rollout, prompts);
    float* rescored = score(policy, &batch, &sampling);
    int64_t equal = 0;
    for (int64_t t = 0; t < batch.completion_tokens; ++t) {
      equal += memcmp(&rescored[t], &batch.generated_logprobs[t], sizeof(float)) == 0;
    }
    char mismatch[32] = "(reference)";
    if (r == 0) {
      bf16_batch = batch;
      bf16_plain = score(policy, &bf16_batch, &plain);
    } else {
      /* The BF16 completions scored under this recipe: mean exp(|logp - logp_bf16|). */
      float* other = score(policy, &bf16_batch, &plain);
      double sum = 0.0;
      for (int64_t t = 0; t < bf16_batch.completion_tokens; ++t) {
        sum += exp(fabs((double)other[t] - (double)bf16_plain[t]));
      }
      snprintf(mismatch, sizeof mismatch, "%.5f", sum / (double)bf16_batch.completion_tokens);
      free(other);
      free(batch.tokens);
      free(batch.generated_logprobs);
    }
    printf("%-24s %10lld %12.1f %11lld/%-6lld %22s\n", kRecipes[r].name, (long long)batch.completion_tokens,
           (double)batch.completion_tokens / seconds, (long long)equal, (long long)batch.completion_tokens, mismatch);
    free(rescored);
    CHECK(fp8rl_rollout_destroy(rollout));
    if (equal != batch.completion_tokens) {
      fprintf(stderr, "generation and scoring log-probs differ\n");
      return 1;
    }
  }
  printf(
      "\ntokens/s: generation wall time including prefill; mult-prob error: mean over the BF16\n"
      "completions' tokens of exp(|log p_recipe - log p_BF16|) under the full softmax (1 = identical).\n");
  free(bf16_plain);
  free(bf16_batch.tokens);
  free(bf16_batch.generated_logprobs);
  CHECK(fp8rl_policy_destroy(policy));
  CHECK(fp8rl_context_destroy(context));
  return 0;
}
