/* The public header compiles as strict C99 and links from C. */
#include <fp8rl/fp8rl.h>
#include <stdio.h>

/* A tiny random policy generates from C; the result is read both ways. */
static int policy_round_trip(fp8rl_context* context) {
  fp8rl_model_config config;
  fp8rl_recipe recipe;
  fp8rl_sampling_options sampling;
  fp8rl_policy* policy = NULL;
  fp8rl_rollout* rollout = NULL;
  const int32_t prompts[] = {3, 4, 5, 6, 7};
  const int64_t offsets[] = {0, 2, 5};
  const uint64_t seeds[] = {1, 2};
  const int32_t* tokens = NULL;
  const float* logprobs = NULL;
  int64_t length = 0, count = 0, total = 0, parameters = 0;
  int64_t flat_offsets[3];
  fp8rl_finish_reason finish = FP8RL_FINISH_STOP;
  fp8rl_finish_reason reasons[2];
  int32_t flat_tokens[8];
  float flat_logprobs[8];
  float scores[8];
  int64_t prompt_lengths[1];
  int32_t sequence[8];
  int64_t sequence_offsets[2] = {0, 0};
  float q[2] = {1.0f, 1.0f};
  int64_t i;
  fp8rl_memory_report report;

  if (fp8rl_model_config_init(&config) != FP8RL_OK) return 10;
  config.family = FP8RL_MODEL_FAMILY_LLAMA;
  config.rope_scaling = FP8RL_ROPE_SCALING_NONE;
  config.vocab_size = 64;
  config.hidden_size = 32;
  config.num_layers = 2;
  config.num_attention_heads = 2;
  config.num_key_value_heads = 1;
  config.intermediate_size = 48;
  config.max_position_embeddings = 32;
  if (fp8rl_model_config_parameter_count(&config, &parameters) != FP8RL_OK || parameters <= 0) return 11;
  if (fp8rl_policy_create_random(context, &config, 5, &policy) != FP8RL_OK) return 12;
  if (fp8rl_policy_parameter_count(policy, &parameters) != FP8RL_OK) return 13;
  if (fp8rl_policy_get_config(policy, &config) != FP8RL_OK || config.vocab_size != 64) return 14;
  if (fp8rl_policy_set_attention_scales(policy, q, q, q, 2) != FP8RL_OK) return 15;
  if (fp8rl_policy_get_attention_scales(policy, q, q, q, 2) != FP8RL_OK) return 16;

  if (fp8rl_recipe_init(&recipe) != FP8RL_OK) return 17;
  recipe.linear = FP8RL_PRECISION_FP8;
  recipe.kv_cache = FP8RL_PRECISION_FP8;
  recipe.attention = FP8RL_PRECISION_BF16;
  if (fp8rl_policy_set_recipe(policy, &recipe) != FP8RL_OK) return 18;
  if (fp8rl_policy_get_recipe(policy, &recipe) != FP8RL_OK || recipe.linear != FP8RL_PRECISION_FP8) return 19;

  if (fp8rl_sampling_options_init(&sampling) != FP8RL_OK) return 20;
  sampling.max_new_tokens = 4;
  if (fp8rl_policy_generate(policy, prompts, offsets, 2, seeds, &sampling, &rollout) != FP8RL_OK) return 21;
  if (fp8rl_rollout_count(rollout, &count) != FP8RL_OK || count != 2) return 22;
  if (fp8rl_rollout_total_tokens(rollout, &total) != FP8RL_OK || total < 2 || total > 8) return 23;
  if (fp8rl_rollout_get(rollout, 1, &tokens, &logprobs, &length, &finish) != FP8RL_OK) return 24;
  if (length < 1 || length > 4 || logprobs[0] > 0.0f) return 25;
  if (finish != FP8RL_FINISH_LENGTH && finish != FP8RL_FINISH_STOP && finish != FP8RL_FINISH_CONTEXT_FULL) return 26;
  if (fp8rl_rollout_copy(rollout, flat_tokens, flat_logprobs, 8, flat_offsets, reasons) != FP8RL_OK) return 27;
  if (flat_offsets[2] != total || flat_tokens[flat_offsets[1]] != tokens[0]) return 28;

  /* Score prompt 1 plus its completion: the log-probs are the generation's. */
  sequence[0] = 5;
  sequence[1] = 6;
  sequence[2] = 7;
  for (i = 0; i < length; ++i) sequence[3 + i] = tokens[i];
  sequence_offsets[1] = 3 + length;
  prompt_lengths[0] = 3;
  if (fp8rl_policy_score(policy, sequence, sequence_offsets, 1, prompt_lengths, &sampling, scores, 8) != FP8RL_OK)
    return 29;
  for (i = 0; i < length; ++i)
    if (scores[i] != logprobs[i]) return 30;

  if (fp8rl_context_destroy(context) != FP8RL_ERROR_INVALID_ARGUMENT) return 31; /* a policy is alive */
  if (fp8rl_rollout_destroy(rollout) != FP8RL_OK) return 32;
  if (fp8rl_policy_save(policy, NULL, FP8RL_DTYPE_F32) != FP8RL_ERROR_INVALID_ARGUMENT) return 33;
  if (fp8rl_policy_export_fp8(policy, NULL) != FP8RL_ERROR_INVALID_ARGUMENT) return 36;
  if (fp8rl_memory_report_init(&report) != FP8RL_OK) return 37;
  if (fp8rl_policy_memory(policy, &report) != FP8RL_OK || report.master_weights != parameters * 4) return 38;
  if (fp8rl_policy_load(context, NULL, &policy) != FP8RL_ERROR_INVALID_ARGUMENT) return 34;
  if (fp8rl_policy_destroy(policy) != FP8RL_OK) return 35;
  return 0;
}

int main(void) {
  fp8rl_context_options options;
  fp8rl_context* context = NULL;
  uint32_t features = 0;
  int status;
  if (fp8rl_version() != FP8RL_VERSION) return 1;
  if (fp8rl_context_options_init(&options) != FP8RL_OK) return 2;
  options.backend = FP8RL_BACKEND_CPU;
  if (fp8rl_context_create(&options, &context) != FP8RL_OK) return 3;
  if (fp8rl_build_features(&features) != FP8RL_OK) return 4;
  status = policy_round_trip(context);
  if (status != 0) {
    fprintf(stderr, "C client: step %d failed: %s\n", status, fp8rl_last_error_message());
    return status;
  }
  if (fp8rl_context_destroy(context) != FP8RL_OK) return 5;
  if (fp8rl_context_create(NULL, &context) != FP8RL_ERROR_INVALID_ARGUMENT) return 6;
  if (fp8rl_last_error_message()[0] == '\0') return 7;
  fprintf(stderr, "C client ok: fp8rl %s, features 0x%x\n", fp8rl_version_string(), (unsigned)features);
  return 0;
}
