// The options shared by subcommands that build the built-in policy: --model
// names a built-in shape (or, where a command loads one, an HF folder) and
// the shape flags override its sizes.
#ifndef FP8RL_TOOLS_MODEL_FLAGS_H
#define FP8RL_TOOLS_MODEL_FLAGS_H

#include <string>
#include <vector>

#include "args.h"
#include "train_config.h"

namespace fp8rl_cli {

// tiny (a dense Llama) and moe-tiny (a Qwen3-MoE with the same attention and
// as many active MLP weights per token).
const std::vector<std::string>& builtin_model_names();
// A --model value that names a built-in shape; "" (not given) is tiny. Any
// other value is an HF folder (write ./tiny for a folder of that name).
bool is_builtin_model(const std::string& model);

// --layers --hidden --heads --kv-heads --intermediate --max-positions
// --experts --experts-per-token --moe-intermediate
void declare_model_flags(ArgParser& parser);
// The shape of the built-in model `name`, with the flags given applied; the
// MoE flags with a dense shape are a UsageError.
ModelShape model_shape(const ArgParser& parser, const std::string& name);
void declare_threads_flag(ArgParser& parser);
int threads(const ArgParser& parser);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_MODEL_FLAGS_H
