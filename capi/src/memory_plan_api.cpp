// fp8rl_memory_plan: a rank's memory from a model config alone (core/dist/memory_plan.h).
#include "api_guard.h"
#include "core/dist/memory_plan.h"
#include "memory_report_convert.h"
#include "model_config_convert.h"
#include "recipe_convert.h"
#include "struct_output.h"

using namespace fp8rl::capi;

extern "C" {

FP8RL_API fp8rl_status fp8rl_memory_plan(const fp8rl_model_config* config, const fp8rl_recipe* recipe,
                                         int32_t world_size, int32_t rank, int64_t kv_cache_tokens,
                                         fp8rl_memory_report* out_report) {
  return guarded(__func__, [&] {
    check_out_struct(out_report, "out_report");
    const fp8rl::model::ModelConfig model_config = model_config_from(config, "config");
    const fp8rl::policy::Recipe plan_recipe = recipe == nullptr ? fp8rl::policy::Recipe{} : recipe_from(recipe);
    const fp8rl::dist::MemoryReport plan =
        fp8rl::dist::plan_memory(model_config, plan_recipe, world_size, rank, kv_cache_tokens);
    write_struct(out_report, to_public(plan), "out_report");
  });
}

}  // extern "C"
