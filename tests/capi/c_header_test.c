/* The public header compiles as strict C99 and links from C. */
#include <fp8rl/fp8rl.h>
#include <stdio.h>

int main(void) {
  fp8rl_context_options options;
  fp8rl_context* context = NULL;
  uint32_t features = 0;
  if (fp8rl_version() != FP8RL_VERSION) return 1;
  if (fp8rl_context_options_init(&options) != FP8RL_OK) return 2;
  options.backend = FP8RL_BACKEND_CPU;
  if (fp8rl_context_create(&options, &context) != FP8RL_OK) return 3;
  if (fp8rl_build_features(&features) != FP8RL_OK) return 4;
  if (fp8rl_context_destroy(context) != FP8RL_OK) return 5;
  if (fp8rl_context_create(NULL, &context) != FP8RL_ERROR_INVALID_ARGUMENT) return 6;
  if (fp8rl_last_error_message()[0] == '\0') return 7;
  fprintf(stderr, "C client ok: fp8rl %s, features 0x%x\n", fp8rl_version_string(), (unsigned)features);
  return 0;
}
