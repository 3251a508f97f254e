// fp8rl_memory_plan through the public header: at one rank it reports what
// fp8rl_trainer_memory() reports for a real trainer of the same config and
// recipe (tied and untied heads, biases, q/k norms; BF16, FP8 and FP8 with
// BF16 edge layers), NULL takes the default recipe, the KV cache adds only
// its own field, and an older, shorter report receives only its fields.
// (Data-parallel ranks and the hand computation: tests/dist/memory_plan_test.cpp.)
#include <cstddef>
#include <cstring>
#include <string>

#include "capi/capi_policy_fixture.h"

namespace capi_test {
namespace {

fp8rl_memory_report plan(const fp8rl_model_config& config, const fp8rl_recipe* recipe, int32_t world, int32_t rank,
                         int64_t tokens) {
  fp8rl_memory_report report;
  REQUIRE(fp8rl_memory_report_init(&report) == FP8RL_OK);
  REQUIRE_MESSAGE(fp8rl_memory_plan(&config, recipe, world, rank, tokens, &report) == FP8RL_OK,
                  std::string(fp8rl_last_error_message()));
  return report;
}

fp8rl_recipe fp8_edges_recipe() {
  fp8rl_recipe recipe = fp8_everything_recipe();
  recipe.bf16_first_layers = 1;
  recipe.bf16_last_layers = 1;
  return recipe;
}

void check_same(const fp8rl_memory_report& a, const fp8rl_memory_report& b) {
  CHECK(a.master_weights == b.master_weights);
  CHECK(a.compute_weights == b.compute_weights);
  CHECK(a.gradients == b.gradients);
  CHECK(a.optimizer_state == b.optimizer_state);
  CHECK(a.backward_weights == b.backward_weights);
  CHECK(a.kv_cache == b.kv_cache);
}

}  // namespace

TEST_CASE("memory plan: at one rank it is what fp8rl_trainer_memory reports for that config and recipe") {
  CpuContext context(1);
  struct Named {
    const char* name;
    fp8rl_model_config config;
  };
  fp8rl_recipe fp8_linear = default_recipe();
  fp8_linear.linear = FP8RL_PRECISION_FP8;
  const Named configs[] = {{"llama", llama_config()}, {"qwen2", qwen2_config()}, {"qwen3", qwen3_config()}};
  const fp8rl_recipe recipes[] = {default_recipe(), fp8_linear, fp8_everything_recipe(), fp8_edges_recipe()};
  for (const Named& named : configs) {
    for (const fp8rl_recipe& recipe : recipes) {
      CAPTURE(named.name);
      CAPTURE(recipe.linear);
      CAPTURE(recipe.bf16_first_layers);
      Policy policy(context.get(), named.config);
      policy.set_recipe(recipe);
      fp8rl_trainer_options options;
      REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
      fp8rl_trainer* trainer = nullptr;
      REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);
      fp8rl_memory_report held;
      REQUIRE(fp8rl_memory_report_init(&held) == FP8RL_OK);
      REQUIRE(fp8rl_trainer_memory(trainer, &held) == FP8RL_OK);
      fp8rl_trainer_destroy(trainer);
      check_same(plan(named.config, &recipe, 1, 0, 0), held);
    }
  }
}

TEST_CASE("memory plan: NULL recipe, the KV cache, and a report from an older header") {
  const fp8rl_model_config config = llama_config();
  const fp8rl_recipe bf16 = default_recipe();
  check_same(plan(config, nullptr, 1, 0, 0), plan(config, &bf16, 1, 0, 0));

  // llama_config: 2 layers, kv_dim 2 heads x 24 = 48; BF16 K and V.
  fp8rl_memory_report with_cache = plan(config, nullptr, 4, 3, 1000);
  CHECK(with_cache.kv_cache == 1000 * 2 * 2 * 48 * 2);
  with_cache.kv_cache = 0;
  check_same(with_cache, plan(config, nullptr, 4, 3, 0));
  const fp8rl_recipe fp8 = fp8_everything_recipe();
  CHECK(plan(config, &fp8, 1, 0, 1000).kv_cache == 1000 * 2 * 2 * 48);  // E4M3: one byte a value

  // A struct that ends before kv_cache gets every field it has and nothing past it.
  fp8rl_memory_report old;
  std::memset(&old, 0x5A, sizeof old);
  old.struct_size = static_cast<uint32_t>(offsetof(fp8rl_memory_report, kv_cache));
  REQUIRE(fp8rl_memory_plan(&config, nullptr, 1, 0, 1000, &old) == FP8RL_OK);
  const fp8rl_memory_report full = plan(config, nullptr, 1, 0, 1000);
  CHECK(old.backward_weights == full.backward_weights);
  int64_t untouched;
  std::memset(&untouched, 0x5A, sizeof untouched);
  CHECK(old.kv_cache == untouched);
}

}  // namespace capi_test
