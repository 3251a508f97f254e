/* The tiny Llama the training-state harness trains and make_state_seed.c
 * saves: both must build the same model, or every seed is "a state of
 * another model". C, because make_state_seed.c is a plain C client. */
#ifndef FP8RL_FUZZ_TINY_MODEL_H
#define FP8RL_FUZZ_TINY_MODEL_H

#include <fp8rl/fp8rl.h>

/* vocab 32, hidden 8, 1 layer, 2 heads (head_dim 4), 1 kv head, SwiGLU 16. */
static inline fp8rl_status fp8rl_fuzz_tiny_config(fp8rl_model_config* config) {
  fp8rl_status status = fp8rl_model_config_init(config);
  if (status != FP8RL_OK) return status;
  config->vocab_size = 32;
  config->hidden_size = 8;
  config->num_layers = 1;
  config->num_attention_heads = 2;
  config->num_key_value_heads = 1;
  config->intermediate_size = 16;
  config->max_position_embeddings = 64;
  return FP8RL_OK;
}

/* The seed the policy's random weights come from (the harness and the seed
 * writer must agree only on the config; the weights are overwritten by a
 * successful load). */
#define FP8RL_FUZZ_TINY_SEED 1u

#endif
