#include "core/policy/policy_load.h"

#include <map>

#include "core/policy/compiled_model.h"

namespace fp8rl::policy {
namespace {

// The stored FP8 weights by the master tensor they were loaded into.
std::map<const model::HostTensor*, const model::Fp8Weight*> by_master(
    const model::ModelParams& params, const std::map<std::string, model::Fp8Weight>& weights) {
  std::map<const model::HostTensor*, const model::Fp8Weight*> out;
  // Read only: for_each_tensor hands out mutable tensors for loaders.
  model::for_each_tensor(const_cast<model::ModelParams&>(params),
                         [&](const std::string& name, const std::vector<int64_t>&, model::HostTensor& tensor) {
                           const auto found = weights.find(name);
                           if (found != weights.end()) out.emplace(&tensor, &found->second);
                         });
  return out;
}

// Overwrites the FP8 compute copies of stored FP8 weights with the stored bits.
void install_fp8_weights(Policy& policy, const std::map<std::string, model::Fp8Weight>& weights) {
  CompiledModel& compiled = policy.compiled_for_refit();
  if (weights.empty() || compiled.scale_format() != ScaleFormat::fp32) return;
  Backend& backend = policy.context().backend();
  const auto stored = by_master(policy.params(), weights);
  for (const ComputeCopy& copy : compiled.copies(policy.params())) {
    const auto found = stored.find(copy.master);
    if (copy.kind != ComputeCopy::Kind::fp8 || found == stored.end()) continue;
    const model::Fp8Weight& weight = *found->second;
    require(weight.codes.size() == static_cast<size_t>(copy.rows * copy.cols) &&
                weight.scales.size() == copy.scale_bytes_before(copy.rows) / sizeof(float),
            "install_fp8_weights: a stored FP8 weight does not match its compute copy");
    backend.upload(copy.values, weight.codes.data(), weight.codes.size());
    backend.upload(copy.scales, weight.scales.data(), weight.scales.size() * sizeof(float));
  }
}

}  // namespace

Recipe checkpoint_recipe(const model::LoadedCheckpoint& checkpoint) {
  Recipe recipe;
  if (!checkpoint.fp8_weights.empty()) {
    recipe.linear = Precision::fp8;
    recipe.scale_format = ScaleFormat::fp32;
  }
  return recipe;
}

std::unique_ptr<Policy> policy_from_checkpoint(Context& context, model::LoadedCheckpoint checkpoint,
                                               const Recipe& recipe) {
  auto policy = std::make_unique<Policy>(context, std::move(checkpoint.params), recipe);
  install_fp8_weights(*policy, checkpoint.fp8_weights);
  return policy;
}

}  // namespace fp8rl::policy
