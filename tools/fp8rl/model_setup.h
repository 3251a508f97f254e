// Building policies: a built-in model (tiny, moe-tiny) from a seed, or an HF folder,
// and the named precision recipes.
#ifndef FP8RL_TOOLS_MODEL_SETUP_H
#define FP8RL_TOOLS_MODEL_SETUP_H

#include <fp8rl/fp8rl.h>

#include <string>
#include <vector>

#include "handles.h"
#include "train_config.h"

namespace fp8rl_cli {

// bf16 fp8 fp8-kv; fp8-gen and fp8-gen-linear (see generates_apart); and
// fp8-head / fp8-kv-head: fp8 / fp8-kv with an FP8 LM head.
const std::vector<std::string>& recipe_names();
// "bf16|fp8|..." for help texts.
std::string recipe_choices();

// Whether `name` generates with another policy than it trains: an FP8 copy
// (fp8-gen: FP8 linear, KV cache and attention; fp8-gen-linear: FP8 linear
// only) samples, a BF16 policy learns, as two engines would.
bool generates_apart(const std::string& name);
// The recipe a policy that *generates* runs under `name`.
fp8rl_recipe generator_recipe(const std::string& name);
// The recipe the *trained* policy runs under `name` (BF16 for generates_apart).
fp8rl_recipe learner_recipe(const std::string& name);

// The built-in model over the task tokenizer's vocabulary: a Llama, or a Qwen3-MoE when shape.experts > 0.
fp8rl_model_config builtin_config(const ModelShape& shape, int64_t vocab_size);

Policy create_random_policy(const Context& context, const fp8rl_model_config& config, uint64_t seed);
Policy load_policy(const Context& context, const std::string& folder);
fp8rl_model_config policy_config(const Policy& policy);
void set_recipe(const Policy& policy, const fp8rl_recipe& recipe);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_MODEL_SETUP_H
