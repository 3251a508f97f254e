// A policy: the master weights of one model, the precision recipe, the
// compute copies of the weights that recipe implies (quantized once, when the
// recipe is set or the weights are refitted), and the per-layer attention
// scales that the FP8 KV cache and FP8 attention use.
//
// Usage:
//   Policy policy(context, model::load_hf_model("SmolLM2-135M"));
//   policy.set_recipe(fp8_recipe);                       // requantizes the weights
//   std::vector<rollout::Rollout> out = rollout::generate(policy, prompts, seeds, sampling);
//
// Thread safety: none of its own; the C API serializes calls on the policy's
// context.
#pragma once

#include <memory>
#include <vector>

#include "core/context.h"
#include "core/model/model_params.h"
#include "core/policy/device_masters.h"
#include "core/policy/recipe.h"

namespace fp8rl::policy {

class CompiledModel;
class ModelRunner;

// Per-layer scales of the FP8 KV cache and FP8 attention: K and V are stored
// as E4M3 codes of value / scale, and Q is quantized with q before Q.K^T.
// Recalibration replaces them; until then they are 1.
struct AttentionScales {
  std::vector<float> q;  // [num_layers]
  std::vector<float> k;  // [num_layers]
  std::vector<float> v;  // [num_layers]
};

// Throws invalid_argument naming the layer unless each of q, k and v has
// num_layers finite, normal, positive values.
void validate_attention_scales(const AttentionScales& scales, int64_t num_layers);

class Policy {
 public:
  // Checks the parameters (model::check_model_params) and the recipe, then
  // builds the compute copies on the context's backend.
  Policy(Context& context, model::ModelParams params, const Recipe& recipe = {});
  ~Policy();
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  Context& context() const { return context_; }
  const model::ModelConfig& config() const { return params_.config; }
  // The master weights, downloaded first from attached device masters that changed.
  const model::ModelParams& params() const;
  const Recipe& recipe() const { return recipe_; }
  const AttentionScales& attention_scales() const { return scales_; }

  // Validates, then rebuilds the compute weights; on any error the policy
  // keeps its previous recipe and weights.
  void set_recipe(const Recipe& recipe);
  // Sizes must equal num_layers and values be finite and > 0
  // (invalid_argument otherwise, naming the layer).
  void set_attention_scales(const AttentionScales& scales);

  // The host tensors by address, naming them for gradients and device
  // masters; their values may lag behind attached masters (read params()).
  model::ModelParams& host_tensors() { return params_; }
  // Requantizes the compute copies from the master weights: on the device
  // from attached device masters, else uploaded from the host copy.
  void refit();

  // Device masters (a trainer's arena) take over the master weights until
  // detached or replaced by others; the host copy is brought up to date first.
  void attach_masters(DeviceMasters* masters);
  // The host copy takes the masters' values back; a no-op unless attached.
  // Partial masters (DeviceMasters::complete) cannot be taken back: reading
  // the master weights then fails until weights are replaced or copied in.
  void detach_masters(const DeviceMasters* masters);
  const DeviceMasters* attached_masters() const { return masters_; }
  // The attached masters changed on the device (an optimizer step).
  void masters_updated() { host_stale_ = true; }
  // Replaces the weights (same model config), the recipe and the scales
  // together, as a checkpoint restores them; everything is validated first,
  // so on error the policy is unchanged.
  void replace_state(model::ModelParams params, const Recipe& recipe, const AttentionScales& scales);
  // Takes source's master weights and attention scales, keeps this policy's
  // recipe, and requantizes. invalid_argument for another model config.
  void copy_weights_from(const Policy& source);

  const CompiledModel& compiled() const { return *compiled_; }
  // For a trainer that refits the compute copies itself (data parallelism,
  // core/train/weight_gather.h).
  CompiledModel& compiled_for_refit() { return *compiled_; }
  // The forward machinery (workspace, RoPE tables) this policy's passes share.
  ModelRunner& runner() { return *runner_; }

 private:
  void sync_host() const;

  Context& context_;
  mutable model::ModelParams params_;  // the host copy; behind masters_ while host_stale_
  DeviceMasters* masters_ = nullptr;
  mutable bool host_stale_ = false;
  Recipe recipe_;
  AttentionScales scales_;
  std::unique_ptr<CompiledModel> compiled_;
  std::unique_ptr<ModelRunner> runner_;
};

}  // namespace fp8rl::policy
