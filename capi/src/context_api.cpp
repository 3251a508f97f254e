#include "api_guard.h"
#include "enum_mapping.h"
#include "handles.h"
#include "kernels/cpu/cpu_backend.h"

using fp8rl::capi::context_of;
using fp8rl::capi::enum_message;
using fp8rl::capi::raw;
using fp8rl::capi::guarded;

namespace {

fp8rl_context_options default_context_options() {
  fp8rl_context_options options{};
  options.struct_size = sizeof(options);
  options.backend = FP8RL_BACKEND_AUTO;
  options.num_threads = 0;
  options.cuda_device = 0;
  options.log_level = FP8RL_LOG_WARNING;
  options.log_callback = nullptr;
  options.log_user_data = nullptr;
  options.communicator = nullptr;
  return options;
}

fp8rl::BackendRequest backend_request(const fp8rl_context_options& options) {
  const int32_t backend = raw(options.backend);
  fp8rl::require(backend >= FP8RL_BACKEND_AUTO && backend <= FP8RL_BACKEND_CUDA,
                 enum_message("options->backend", backend, "AUTO, CPU or CUDA"));
  fp8rl::require(options.num_threads >= 0 && options.num_threads <= 4096,
                 "options->num_threads is " + std::to_string(options.num_threads) + "; expected 0 (all) to 4096");
  fp8rl::require(options.cuda_device >= 0, "options->cuda_device is negative");
  return fp8rl::BackendRequest{static_cast<fp8rl::BackendChoice>(backend), options.num_threads,
                               options.cuda_device};
}

fp8rl::Logger logger(const fp8rl_context_options& options) {
  const int32_t threshold_value = raw(options.log_level);
  fp8rl::require(threshold_value >= FP8RL_LOG_DEBUG && threshold_value <= FP8RL_LOG_OFF,
                 enum_message("options->log_level", threshold_value, "DEBUG..OFF"));
  const auto threshold = static_cast<fp8rl::LogLevel>(threshold_value);
  if (options.log_callback == nullptr) return fp8rl::Logger({}, threshold);
  const fp8rl_log_callback callback = options.log_callback;
  void* user_data = options.log_user_data;
  return fp8rl::Logger(
      [callback, user_data](fp8rl::LogLevel level, const char* message) {
        callback(static_cast<fp8rl_log_level>(level), message, user_data);
      },
      threshold);
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_context_options_init(fp8rl_context_options* options) {
  return guarded(__func__, [&] {
    fp8rl::require(options != nullptr, "options is NULL");
    *options = default_context_options();
  });
}

FP8RL_API fp8rl_status fp8rl_context_create(const fp8rl_context_options* options, fp8rl_context** out_context) {
  return guarded(__func__, [&] {
    fp8rl::require(out_context != nullptr, "out_context is NULL");
    const auto resolved = fp8rl::capi::read_options(options, default_context_options(), "options");
    std::shared_ptr<fp8rl::dist::Communicator> communicator;
    if (resolved.communicator != nullptr) communicator = resolved.communicator->impl;
    *out_context = new fp8rl_context{fp8rl::Context(backend_request(resolved), logger(resolved), communicator)};
  });
}

FP8RL_API fp8rl_status fp8rl_context_destroy(fp8rl_context* context) {
  return guarded(__func__, [&] {
    if (context == nullptr) return;
    const int64_t live = context->live_policies.load();
    fp8rl::require(live == 0, std::to_string(live) + (live == 1 ? " policy is" : " policies are") +
                                  " still alive on this context; destroy them first");
    delete context;
  });
}

FP8RL_API fp8rl_status fp8rl_context_get_backend(const fp8rl_context* context, fp8rl_backend* out_backend) {
  return guarded(__func__, [&] {
    const auto& impl = context_of(context);
    fp8rl::require(out_backend != nullptr, "out_backend is NULL");
    *out_backend = impl.backend_kind() == fp8rl::BackendKind::cuda ? FP8RL_BACKEND_CUDA : FP8RL_BACKEND_CPU;
  });
}

FP8RL_API fp8rl_status fp8rl_context_get_num_threads(const fp8rl_context* context, int32_t* out_num_threads) {
  return guarded(__func__, [&] {
    const auto& impl = context_of(context);
    fp8rl::require(out_num_threads != nullptr, "out_num_threads is NULL");
    *out_num_threads = impl.num_threads();
  });
}

FP8RL_API fp8rl_status fp8rl_context_get_rank(const fp8rl_context* context, int32_t* out_rank) {
  return guarded(__func__, [&] {
    const auto& impl = context_of(context);
    fp8rl::require(out_rank != nullptr, "out_rank is NULL");
    *out_rank = impl.rank();
  });
}

FP8RL_API fp8rl_status fp8rl_context_get_world_size(const fp8rl_context* context, int32_t* out_world_size) {
  return guarded(__func__, [&] {
    const auto& impl = context_of(context);
    fp8rl::require(out_world_size != nullptr, "out_world_size is NULL");
    *out_world_size = impl.world_size();
  });
}

FP8RL_API fp8rl_status fp8rl_context_get_description(const fp8rl_context* context, const char** out_description) {
  return guarded(__func__, [&] {
    const auto& impl = context_of(context);
    fp8rl::require(out_description != nullptr, "out_description is NULL");
    *out_description = impl.description().c_str();
  });
}

FP8RL_API fp8rl_status fp8rl_build_features(uint32_t* out_features) {
  return guarded(__func__, [&] {
    fp8rl::require(out_features != nullptr, "out_features is NULL");
    uint32_t features = fp8rl::cuda_backend_compiled() ? static_cast<uint32_t>(FP8RL_FEATURE_CUDA) : 0u;
    const fp8rl::SimdLevel simd = fp8rl::detect_simd_level();
    if (simd >= fp8rl::SimdLevel::avx2) features |= FP8RL_FEATURE_AVX2;
    if (simd >= fp8rl::SimdLevel::avx512) features |= FP8RL_FEATURE_AVX512;
    *out_features = features;
  });
}

}  // extern "C"
