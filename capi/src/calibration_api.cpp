#include <mutex>

#include "api_guard.h"
#include "core/policy/calibration.h"
#include "handles.h"

using namespace fp8rl::capi;

namespace {

fp8rl_calibration_options default_calibration_options() {
  const fp8rl::policy::CalibrationOptions defaults;
  fp8rl_calibration_options options{};
  options.struct_size = sizeof(options);
  options.percentile = defaults.percentile;
  options.margin = defaults.margin;
  options.max_value = defaults.max_value;
  return options;
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_calibration_options_init(fp8rl_calibration_options* options) {
  return guarded(__func__, [&] {
    fp8rl::require(options != nullptr, "options is NULL");
    *options = default_calibration_options();
  });
}

FP8RL_API fp8rl_status fp8rl_policy_recalibrate_attention_scales(fp8rl_policy* policy, const int32_t* tokens,
                                                                 const int64_t* offsets, int64_t num_sequences,
                                                                 const fp8rl_calibration_options* options) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    const fp8rl_calibration_options given = read_options(options, default_calibration_options(), "options");
    fp8rl::policy::CalibrationOptions calibration;
    calibration.percentile = given.percentile;
    calibration.margin = given.margin;
    calibration.max_value = given.max_value;
    const fp8rl::rollout::TokenSequences sequences{tokens, offsets, num_sequences};
    const std::lock_guard<std::mutex> lock(policy->context->impl.mutex());
    fp8rl::policy::recalibrate_attention_scales(impl, sequences, calibration);
  });
}

}  // extern "C"
