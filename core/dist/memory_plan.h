// What one rank of a training run holds in memory, by component: measured
// from a live policy or trainer, or planned from a model config alone. The
// plan composes the same size functions the allocations use (the arena's
// layout and shard bounds, linear_sizes, kv_layer_bytes) over the config's
// tensors, so planning an 8B or 70B model allocates nothing and at N ranks
// it equals rank r's trainer_memory().
//
// Data parallelism only: every rank holds the full host and arena masters,
// compute and transposed weights, gradients and KV cache; the AdamW moments
// alone are sharded (ZeRO-1/2, core/train/param_arena.h). Activations,
// workspaces and staging buffers are not counted.
#pragma once

#include <cstdint>

#include "core/model/model_config.h"
#include "core/policy/policy.h"
#include "core/policy/recipe.h"
#include "core/train/trainer.h"

namespace fp8rl::dist {

// Bytes, as fp8rl_memory_report has them.
struct MemoryReport {
  int64_t master_weights = 0;    // FP32: the policy's host copy, plus a trainer's arena
  int64_t compute_weights = 0;   // the recipe's compute copies (BF16, E4M3 codes and block scales)
  int64_t gradients = 0;         // FP32, every element of the arena
  int64_t optimizer_state = 0;   // AdamW's two FP32 moments over this rank's shard
  int64_t backward_weights = 0;  // the transposed compute copies
  int64_t kv_cache = 0;          // plans only: the cache for the planned tokens
};

MemoryReport policy_memory(const policy::Policy& policy);
// The trainer's and its policy's.
MemoryReport trainer_memory(const policy::Policy& policy, const train::Trainer& trainer);

// Rank `rank` of `world_size` training `config` under `recipe`, with a KV
// cache of kv_cache_tokens positions (all sequences together). Throws
// invalid_argument naming the argument: config or recipe invalid,
// world_size outside [1, kMaxPlanRanks], rank outside [0, world_size),
// kv_cache_tokens negative or so large that the bytes overflow.
inline constexpr int kMaxPlanRanks = 1 << 20;
MemoryReport plan_memory(const model::ModelConfig& config, const policy::Recipe& recipe, int world_size, int rank,
                         int64_t kv_cache_tokens);

}  // namespace fp8rl::dist
