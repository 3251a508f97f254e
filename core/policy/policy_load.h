// A policy from a Hugging Face checkpoint, FP8 checkpoints included: the
// stored FP8 weights (core/model/fp8_checkpoint.h) become the FP8 compute
// copies as they are, not requantized from their dequantization.
//
// Usage:
//   model::LoadedCheckpoint checkpoint = model::load_hf_checkpoint("Qwen3-0.6B-FP8");
//   const Recipe recipe = checkpoint_recipe(checkpoint);   // FP8 linears, FP32 scales
//   std::unique_ptr<Policy> policy = policy_from_checkpoint(context, std::move(checkpoint), recipe);
#pragma once

#include <memory>

#include "core/model/hf_checkpoint_load.h"
#include "core/policy/policy.h"

namespace fp8rl::policy {

// The recipe a checkpoint loads with when the caller names none: for one
// with FP8 weights, the default recipe with FP8 linear layers and FP32 block
// scales, so that they run as stored; otherwise the default recipe.
Recipe checkpoint_recipe(const model::LoadedCheckpoint& checkpoint);

// A policy of the checkpoint's masters under `recipe` (Policy's checks and
// errors). Each compute copy that runs a stored FP8 weight in FP8 with FP32
// block scales holds the stored codes and scales bit for bit; every other
// copy (BF16 linears, power-of-2 scales, weights stored unquantized) derives
// from the masters as always. A later refit or set_recipe requantizes from
// the masters, which reproduces the stored scales where they are amax / 448
// of their blocks (as fp8rl and DeepSeek-style quantizers write them) and
// may differ in the last bits elsewhere.
std::unique_ptr<Policy> policy_from_checkpoint(Context& context, model::LoadedCheckpoint checkpoint,
                                               const Recipe& recipe);

}  // namespace fp8rl::policy
