// The options shared by subcommands that build the built-in policy.
#ifndef FP8RL_TOOLS_MODEL_FLAGS_H
#define FP8RL_TOOLS_MODEL_FLAGS_H

#include "args.h"
#include "train_config.h"

namespace fp8rl_cli {

void declare_model_flags(ArgParser& parser);  // --layers --hidden --heads --kv-heads --intermediate --max-positions
ModelShape model_shape(const ArgParser& parser);
void declare_threads_flag(ArgParser& parser);
int threads(const ArgParser& parser);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_MODEL_FLAGS_H
