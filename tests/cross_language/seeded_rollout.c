/* One seeded rollout through the C API, printed bitwise: the reference the
 * Python and Rust versions of this program must reproduce exactly.
 * Usage: seeded_rollout bf16|fp8. Per completion: "tokens: t1 t2 ..." and
 * "logprobs: " followed by each float's bit pattern in hex. */
#include <fp8rl/fp8rl.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                   \
  do {                                                                \
    if ((call) != FP8RL_OK) {                                         \
      fprintf(stderr, "%s: %s\n", #call, fp8rl_last_error_message()); \
      return 1;                                                       \
    }                                                                 \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "bf16") != 0 && strcmp(argv[1], "fp8") != 0)) {
    fprintf(stderr, "usage: %s bf16|fp8\n", argv[0]);
    return 2;
  }
  fp8rl_context_options context_options;
  fp8rl_context* context;
  CHECK(fp8rl_context_options_init(&context_options));
  context_options.backend = FP8RL_BACKEND_CPU;
  CHECK(fp8rl_context_create(&context_options, &context));
  fp8rl_model_config config; /* the tiny Llama of examples/rl_loop.c */
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
  fp8rl_recipe recipe;
  CHECK(fp8rl_recipe_init(&recipe));
  if (strcmp(argv[1], "fp8") == 0) recipe.linear = recipe.kv_cache = recipe.attention = FP8RL_PRECISION_FP8;
  CHECK(fp8rl_policy_set_recipe(policy, &recipe));

  fp8rl_sampling_options sampling;
  CHECK(fp8rl_sampling_options_init(&sampling));
  sampling.temperature = 0.8f;
  sampling.max_new_tokens = 8;
  sampling.stop_at_eos = 0;
  const int32_t prompts[] = {1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t offsets[] = {0, 3, 7, 8};
  const uint64_t seeds[] = {11, 12, 13};
  fp8rl_rollout* rollout;
  CHECK(fp8rl_policy_generate(policy, prompts, offsets, 3, seeds, &sampling, &rollout));
  for (int64_t i = 0; i < 3; ++i) {
    const int32_t* tokens;
    const float* logprobs;
    int64_t length;
    CHECK(fp8rl_rollout_get(rollout, i, &tokens, &logprobs, &length, NULL));
    printf("tokens:");
    for (int64_t j = 0; j < length; ++j) printf(" %d", tokens[j]);
    printf("\nlogprobs:");
    for (int64_t j = 0; j < length; ++j) {
      uint32_t bits;
      memcpy(&bits, &logprobs[j], sizeof bits);
      printf(" %08x", bits);
    }
    printf("\n");
  }
  CHECK(fp8rl_rollout_destroy(rollout));
  CHECK(fp8rl_policy_destroy(policy));
  CHECK(fp8rl_context_destroy(context));
  return 0;
}
