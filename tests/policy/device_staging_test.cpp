// The core on a device backend: a policy on the fake device (poisoned,
// tracked allocations; host pointers refused) must give the CPU context's
// bits, touching device memory only through the backend, and must quantize
// its FP8 weights once per recipe or refit, never per call.
#include <doctest/doctest.h>

#include "policy_test_support.h"
#include "tests/core/fake_device_backend.h"

namespace fp8rl::test {
namespace {

struct DeviceContext {
  FakeDeviceBackend* device = nullptr;
  Context context;

  DeviceContext() : context(make(&device), Logger(), 2) {}

  static std::unique_ptr<Backend> make(FakeDeviceBackend** out) {
    auto backend = std::make_unique<FakeDeviceBackend>();
    *out = backend.get();
    return backend;
  }
};

policy::Recipe fp8_everything() {
  policy::Recipe recipe;
  recipe.linear = policy::Precision::fp8;
  recipe.kv_cache = policy::Precision::fp8;
  recipe.attention = policy::Precision::fp8;
  return recipe;
}

}  // namespace

TEST_CASE("a policy on a device backend reproduces the CPU bits") {
  DeviceContext staged;
  Context direct(cpu_request(2), Logger());
  const model::ModelConfig config = tiny_qwen2();
  const FlatSequences prompts = test_prompts({7, 2, 12}, 301, 8);
  rollout::SamplingOptions options;
  options.max_new_tokens = 6;
  options.batch_slots = 2;
  for (const NamedRecipe& recipe : all_recipes()) {
    CAPTURE(std::string(recipe.name));
    policy::Policy on_device(staged.context, tiny_params(config), recipe.recipe);
    policy::Policy on_cpu(direct, tiny_params(config), recipe.recipe);
    const auto device_rollouts = rollout::generate(on_device, prompts.view(), {1, 2, 3}, options);
    const auto cpu_rollouts = rollout::generate(on_cpu, prompts.view(), {1, 2, 3}, options);
    for (size_t i = 0; i < cpu_rollouts.size(); ++i) {
      CHECK(device_rollouts[i].tokens == cpu_rollouts[i].tokens);
      CHECK(std::memcmp(device_rollouts[i].logprobs.data(), cpu_rollouts[i].logprobs.data(),
                        cpu_rollouts[i].logprobs.size() * sizeof(float)) == 0);
    }
    CHECK(rollout::full_logits(on_device, prompts.view()) == rollout::full_logits(on_cpu, prompts.view()));
  }
}

TEST_CASE("FP8 weights are quantized once per recipe or refit, not per call") {
  DeviceContext staged;
  const model::ModelConfig config = tiny_llama();
  const int64_t per_model = 7 * config.num_layers;  // q, k, v, o, gate, up, down
  policy::Policy policy(staged.context, tiny_params(config));
  CHECK(staged.device->weight_quantizations == 0);  // BF16 recipe
  policy.set_recipe(fp8_everything());
  CHECK(staged.device->weight_quantizations == per_model);

  const FlatSequences prompts = test_prompts({5, 9}, 301, 9);
  rollout::SamplingOptions options;
  options.max_new_tokens = 5;
  const auto rollouts = rollout::generate(policy, prompts.view(), {4, 5}, options);
  rollout::full_logits(policy, prompts.view());
  CHECK(staged.device->weight_quantizations == per_model);

  policy.refit();
  CHECK(staged.device->weight_quantizations == 2 * per_model);
  // Refitting unchanged weights changes nothing.
  const auto again = rollout::generate(policy, prompts.view(), {4, 5}, options);
  for (size_t i = 0; i < rollouts.size(); ++i) CHECK(again[i].tokens == rollouts[i].tokens);
}

}  // namespace fp8rl::test
