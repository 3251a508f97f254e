#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>

#include "api_guard.h"
#include "core/dist/memory_plan.h"
#include "core/model/model_params.h"
#include "core/policy/fingerprint.h"
#include "core/policy/fp8_export.h"
#include "core/policy/policy_load.h"
#include "enum_mapping.h"
#include "handles.h"
#include "memory_report_convert.h"
#include "model_config_convert.h"
#include "recipe_convert.h"
#include "struct_output.h"

using namespace fp8rl::capi;
using fp8rl::policy::Policy;

namespace {

// Builds the policy on the context (serialized with its other calls) and
// hands out a handle; nothing is written to *out and nothing leaks on failure.
void create_policy(fp8rl_context* context, const std::function<std::unique_ptr<Policy>(fp8rl::Context&)>& build,
                   fp8rl_policy** out, std::string folder = {}) {
  auto& impl = context_of(context);
  std::unique_ptr<Policy> policy;
  {
    const std::lock_guard<std::mutex> lock(impl.mutex());
    policy = build(impl);
  }
  auto handle = std::make_unique<fp8rl_policy>();
  handle->context = context;
  handle->impl = std::move(policy);
  handle->folder = std::move(folder);
  ++context->live_policies;
  *out = handle.release();
}

// The folder as an absolute path, so that fp8rl_policy_load_tokenizer finds
// it after the caller changes the working directory.
std::string absolute_folder(const char* folder) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(folder, error);
  return error ? std::string(folder) : absolute.string();
}

std::mutex& mutex_of(const fp8rl_policy* policy) {
  fp8rl::require(policy != nullptr, "policy is NULL");
  return policy->context->impl.mutex();
}

void check_scale_arrays(const fp8rl_policy* policy, const void* q, const void* k, const void* v, int64_t num_layers) {
  const int64_t layers = policy_of(policy).config().num_layers;
  fp8rl::require(q != nullptr, "q is NULL");
  fp8rl::require(k != nullptr, "k is NULL");
  fp8rl::require(v != nullptr, "v is NULL");
  fp8rl::require(num_layers == layers, "num_layers is " + std::to_string(num_layers) + "; the model has " +
                                           std::to_string(layers) + " layers");
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_recipe_init(fp8rl_recipe* recipe) {
  return guarded(__func__, [&] {
    fp8rl::require(recipe != nullptr, "recipe is NULL");
    *recipe = default_recipe();
  });
}

FP8RL_API fp8rl_status fp8rl_policy_create_random(fp8rl_context* context, const fp8rl_model_config* config,
                                                  uint64_t seed, fp8rl_policy** out_policy) {
  return guarded(__func__, [&] {
    context_of(context);
    fp8rl::require(out_policy != nullptr, "out_policy is NULL");
    const fp8rl::model::ModelConfig model_config = model_config_from(config, "config");
    fp8rl::model::ModelParams params = fp8rl::model::random_model_params(model_config, seed);
    create_policy(
        context, [&](fp8rl::Context& impl) { return std::make_unique<Policy>(impl, std::move(params)); }, out_policy);
  });
}

FP8RL_API fp8rl_status fp8rl_policy_load(fp8rl_context* context, const char* folder, fp8rl_policy** out_policy) {
  return guarded(__func__, [&] {
    context_of(context);
    require_path(folder, "folder");
    fp8rl::require(out_policy != nullptr, "out_policy is NULL");
    // Reading the files needs no lock: only the policy's construction uses the backend.
    fp8rl::model::LoadedCheckpoint checkpoint = fp8rl::model::load_hf_checkpoint(folder);
    const fp8rl::policy::Recipe recipe = fp8rl::policy::checkpoint_recipe(checkpoint);
    create_policy(
        context,
        [&](fp8rl::Context& impl) { return fp8rl::policy::policy_from_checkpoint(impl, std::move(checkpoint), recipe); },
        out_policy, absolute_folder(folder));
  });
}

FP8RL_API fp8rl_status fp8rl_policy_save(fp8rl_policy* policy, const char* folder, fp8rl_dtype dtype) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    require_path(folder, "folder");
    const fp8rl::io::DType weight_dtype = weight_dtype_from(dtype, "dtype");
    const std::lock_guard<std::mutex> lock(mutex_of(policy));
    fp8rl::model::save_hf_model(folder, impl.params(), weight_dtype);
  });
}

FP8RL_API fp8rl_status fp8rl_policy_export_fp8(fp8rl_policy* policy, const char* folder) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    require_path(folder, "folder");
    const std::lock_guard<std::mutex> lock(mutex_of(policy));
    fp8rl::policy::export_fp8_checkpoint(impl, folder);
  });
}

FP8RL_API fp8rl_status fp8rl_policy_destroy(fp8rl_policy* policy) {
  return guarded(__func__, [&] {
    if (policy == nullptr) return;
    const int64_t trainers = policy->live_trainers.load();
    fp8rl::require(trainers == 0, std::to_string(trainers) + (trainers == 1 ? " trainer uses" : " trainers use") +
                                      " this policy; destroy them first");
    fp8rl_context* context = policy->context;
    {
      const std::lock_guard<std::mutex> lock(context->impl.mutex());
      delete policy;  // frees device memory through the context's backend
    }
    --context->live_policies;
  });
}

FP8RL_API fp8rl_status fp8rl_policy_get_config(const fp8rl_policy* policy, fp8rl_model_config* out_config) {
  return guarded(__func__, [&] {
    const auto& impl = policy_of(policy);
    fp8rl::require(out_config != nullptr, "out_config is NULL");
    // The architecture never changes after creation: no lock needed.
    write_struct(out_config, fp8rl::capi::to_public(impl.config()), "out_config");
  });
}

FP8RL_API fp8rl_status fp8rl_policy_parameter_count(const fp8rl_policy* policy, int64_t* out_count) {
  return guarded(__func__, [&] {
    const auto& impl = policy_of(policy);
    fp8rl::require(out_count != nullptr, "out_count is NULL");
    *out_count = fp8rl::model::parameter_count(impl.config());
  });
}

FP8RL_API fp8rl_status fp8rl_memory_report_init(fp8rl_memory_report* report) {
  return guarded(__func__, [&] { init_struct(report, "report"); });
}

FP8RL_API fp8rl_status fp8rl_policy_memory(const fp8rl_policy* policy, fp8rl_memory_report* out_report) {
  return guarded(__func__, [&] {
    const auto& impl = policy_of(policy);
    fp8rl::require(out_report != nullptr, "out_report is NULL");
    fp8rl::dist::MemoryReport report;
    {
      const std::lock_guard<std::mutex> lock(mutex_of(policy));
      report = fp8rl::dist::policy_memory(impl);
    }
    write_struct(out_report, to_public(report), "out_report");
  });
}

FP8RL_API fp8rl_status fp8rl_policy_fingerprint(const fp8rl_policy* policy, uint64_t* out_fingerprint) {
  return guarded(__func__, [&] {
    const auto& impl = policy_of(policy);
    fp8rl::require(out_fingerprint != nullptr, "out_fingerprint is NULL");
    const std::lock_guard<std::mutex> lock(mutex_of(policy));
    *out_fingerprint = fp8rl::policy::fingerprint(impl);
  });
}

FP8RL_API fp8rl_status fp8rl_policy_copy_weights(fp8rl_policy* destination, const fp8rl_policy* source) {
  return guarded(__func__, [&] {
    fp8rl::require(destination != nullptr, "destination is NULL");
    fp8rl::require(source != nullptr, "source is NULL");
    auto& target = policy_of(destination);
    const auto& origin = policy_of(source);
    fp8rl::require(destination != source, "destination and source are the same policy");
    // Lock both contexts (once when shared) without deadlocking against a reverse copy.
    std::mutex& a = mutex_of(destination);
    std::mutex& b = mutex_of(source);
    std::unique_lock<std::mutex> first(&a < &b ? a : b, std::defer_lock);
    std::unique_lock<std::mutex> second(&a < &b ? b : a, std::defer_lock);
    if (&a == &b) {
      first.lock();
    } else {
      std::lock(first, second);
    }
    target.copy_weights_from(origin);
  });
}

FP8RL_API fp8rl_status fp8rl_policy_set_recipe(fp8rl_policy* policy, const fp8rl_recipe* recipe) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    const fp8rl::policy::Recipe parsed = recipe_from(recipe);
    const std::lock_guard<std::mutex> lock(mutex_of(policy));
    impl.set_recipe(parsed);
  });
}

FP8RL_API fp8rl_status fp8rl_policy_get_recipe(const fp8rl_policy* policy, fp8rl_recipe* out_recipe) {
  return guarded(__func__, [&] {
    const auto& impl = policy_of(policy);
    fp8rl::require(out_recipe != nullptr, "out_recipe is NULL");
    fp8rl_recipe recipe;
    {
      const std::lock_guard<std::mutex> lock(mutex_of(policy));
      recipe = to_public(impl.recipe());
    }
    write_struct(out_recipe, recipe, "out_recipe");
  });
}

FP8RL_API fp8rl_status fp8rl_policy_set_attention_scales(fp8rl_policy* policy, const float* q, const float* k,
                                                         const float* v, int64_t num_layers) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    check_scale_arrays(policy, q, k, v, num_layers);
    fp8rl::policy::AttentionScales scales;
    scales.q.assign(q, q + num_layers);
    scales.k.assign(k, k + num_layers);
    scales.v.assign(v, v + num_layers);
    const std::lock_guard<std::mutex> lock(mutex_of(policy));
    impl.set_attention_scales(scales);
  });
}

FP8RL_API fp8rl_status fp8rl_policy_get_attention_scales(const fp8rl_policy* policy, float* q, float* k, float* v,
                                                         int64_t num_layers) {
  return guarded(__func__, [&] {
    const auto& impl = policy_of(policy);
    check_scale_arrays(policy, q, k, v, num_layers);
    const std::lock_guard<std::mutex> lock(mutex_of(policy));
    const fp8rl::policy::AttentionScales& scales = impl.attention_scales();
    std::copy(scales.q.begin(), scales.q.end(), q);
    std::copy(scales.k.begin(), scales.k.end(), k);
    std::copy(scales.v.begin(), scales.v.end(), v);
  });
}

}  // extern "C"
