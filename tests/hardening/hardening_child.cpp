// A separate process for the hardening tests, so that a load's peak memory
// can be measured on its own (wait4's ru_maxrss) and a save can be killed
// mid-write. Exit code: the fp8rl status of the call (0 for OK).
//
//   hardening_child baseline                 a context and a tiny policy, nothing loaded
//   hardening_child load-policy FOLDER       fp8rl_policy_load
//   hardening_child load-state FILE          fp8rl_trainer_load_state into a tiny trainer
//   hardening_child save-loop FOLDER         fp8rl_policy_save until killed
#include <fp8rl/fp8rl.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

fp8rl_model_config tiny_config() {
  fp8rl_model_config config;
  fp8rl_model_config_init(&config);
  config.vocab_size = 32;
  config.hidden_size = 64;
  config.num_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.intermediate_size = 128;
  config.max_position_embeddings = 64;
  return config;
}

int report(fp8rl_status status) {
  if (status != FP8RL_OK) std::fprintf(stderr, "%s: %s\n", fp8rl_status_name(status), fp8rl_last_error_message());
  return static_cast<int>(status);
}

int run(fp8rl_context* context, const std::string& mode, const char* path) {
  const fp8rl_model_config config = tiny_config();
  fp8rl_policy* policy = nullptr;
  fp8rl_status status = fp8rl_policy_create_random(context, &config, 7, &policy);
  if (status != FP8RL_OK) return report(status);
  if (mode == "load-policy") {
    fp8rl_policy* loaded = nullptr;
    status = fp8rl_policy_load(context, path, &loaded);
    fp8rl_policy_destroy(loaded);
  } else if (mode == "load-state") {
    fp8rl_trainer_options options;
    fp8rl_trainer_options_init(&options);
    fp8rl_trainer* trainer = nullptr;
    status = fp8rl_trainer_create(policy, &options, &trainer);
    if (status == FP8RL_OK) status = fp8rl_trainer_load_state(trainer, path);
    fp8rl_trainer_destroy(trainer);
  } else if (mode == "save-loop") {
    while (status == FP8RL_OK) status = fp8rl_policy_save(policy, path, FP8RL_DTYPE_BF16);
  } else if (mode != "baseline") {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    status = FP8RL_ERROR_INVALID_ARGUMENT;
  }
  fp8rl_policy_destroy(policy);
  return report(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "baseline") != 0 && argc < 3)) {
    std::fprintf(stderr, "usage: %s baseline | load-policy FOLDER | load-state FILE | save-loop FOLDER\n", argv[0]);
    return 64;
  }
  fp8rl_context_options options;
  fp8rl_context_options_init(&options);
  options.backend = FP8RL_BACKEND_CPU;
  options.num_threads = 1;
  fp8rl_context* context = nullptr;
  const fp8rl_status status = fp8rl_context_create(&options, &context);
  if (status != FP8RL_OK) return report(status);
  const int code = run(context, argv[1], argc > 2 ? argv[2] : nullptr);
  fp8rl_context_destroy(context);
  return code;
}
