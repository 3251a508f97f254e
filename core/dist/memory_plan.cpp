#include "core/dist/memory_plan.h"

#include <limits>
#include <string>
#include <vector>

#include "core/policy/compiled_model.h"
#include "core/policy/kv_cache.h"
#include "core/train/param_arena.h"
#include "core/train/transposed_model.h"
#include "kernels/error.h"

namespace fp8rl::dist {
namespace {

// The policy's FP32 host copy of the master weights (model::ModelParams).
int64_t host_master_bytes(const model::ModelConfig& config) {
  return model::parameter_count(config) * static_cast<int64_t>(sizeof(float));
}

// The config's tensors with shapes and no values: all ArenaLayout reads.
model::ModelParams shapes_only(const model::ModelConfig& config) {
  model::ModelParams params;
  params.config = config;
  model::size_layers(params);
  return params;
}

}  // namespace

MemoryReport policy_memory(const policy::Policy& policy) {
  MemoryReport report;
  report.master_weights = host_master_bytes(policy.config());
  report.compute_weights = policy.compiled().bytes();
  return report;
}

MemoryReport trainer_memory(const policy::Policy& policy, const train::Trainer& trainer) {
  MemoryReport report = policy_memory(policy);
  const train::Trainer::Memory memory = trainer.memory();
  report.master_weights += memory.master_weights;  // the arena's copy, beside the host copy
  report.gradients = memory.gradients;
  report.optimizer_state = memory.optimizer_state;
  report.backward_weights = memory.backward_weights;
  return report;
}

MemoryReport plan_memory(const model::ModelConfig& config, const policy::Recipe& recipe, int world_size, int rank,
                         int64_t kv_cache_tokens) {
  model::validate(config);
  policy::validate_recipe(recipe);
  require(world_size >= 1 && world_size <= kMaxPlanRanks, "world_size is " + std::to_string(world_size) +
                                                              "; it must be in [1, " + std::to_string(kMaxPlanRanks) +
                                                              "]");
  require(rank >= 0 && rank < world_size,
          "rank is " + std::to_string(rank) + "; it must be in [0, world_size = " + std::to_string(world_size) + ")");
  require(kv_cache_tokens >= 0, "kv_cache_tokens is " + std::to_string(kv_cache_tokens) + "; it must be >= 0");
  const int64_t kv_per_token = policy::kv_cache_bytes(config, recipe, 1);
  require(kv_cache_tokens <= std::numeric_limits<int64_t>::max() / kv_per_token,
          "kv_cache_tokens is " + std::to_string(kv_cache_tokens) + "; at " + std::to_string(kv_per_token) +
              " bytes a token the cache would exceed 2^63 bytes");

  // The trainer's ParamArena: masters and gradients over the whole layout,
  // exp_avg and exp_avg_sq over this rank's shard.
  model::ModelParams shapes = shapes_only(config);
  const train::ArenaLayout layout(shapes);
  const std::vector<int64_t> bounds = layout.shard_bounds(world_size);
  const int64_t shard = bounds[static_cast<size_t>(rank) + 1] - bounds[static_cast<size_t>(rank)];
  const auto fp32 = static_cast<int64_t>(sizeof(float));

  MemoryReport plan;
  plan.master_weights = host_master_bytes(config) + layout.total * fp32;
  plan.compute_weights = policy::compute_weight_bytes(config, recipe);
  plan.gradients = layout.total * fp32;
  plan.optimizer_state = 2 * shard * fp32;
  plan.backward_weights = train::transposed_weight_bytes(config, recipe);
  plan.kv_cache = kv_cache_tokens * kv_per_token;
  return plan;
}

}  // namespace fp8rl::dist
