#include <mutex>

#include "api_guard.h"
#include "core/policy/calibration.h"
#include "handles.h"
#include "options_convert.h"
#include "sequence_arrays.h"

using namespace fp8rl::capi;

namespace fp8rl::capi {

fp8rl_calibration_options to_public(const policy::CalibrationOptions& options) {
  fp8rl_calibration_options result{};
  result.struct_size = sizeof(result);
  result.percentile = options.percentile;
  result.margin = options.margin;
  result.max_value = options.max_value;
  return result;
}

policy::CalibrationOptions calibration_from(const fp8rl_calibration_options& options) {
  policy::CalibrationOptions calibration;
  calibration.percentile = options.percentile;
  calibration.margin = options.margin;
  calibration.max_value = options.max_value;
  return calibration;
}

}  // namespace fp8rl::capi

extern "C" {

FP8RL_API fp8rl_status fp8rl_calibration_options_init(fp8rl_calibration_options* options) {
  return guarded(__func__, [&] {
    fp8rl::require(options != nullptr, "options is NULL");
    *options = to_public(fp8rl::policy::CalibrationOptions{});
  });
}

FP8RL_API fp8rl_status fp8rl_policy_recalibrate_attention_scales(fp8rl_policy* policy, const int32_t* tokens,
                                                                 const int64_t* offsets, int64_t num_sequences,
                                                                 const fp8rl_calibration_options* options) {
  return guarded(__func__, [&] {
    auto& impl = policy_of(policy);
    const fp8rl::policy::CalibrationOptions calibration =
        calibration_from(read_options(options, to_public(fp8rl::policy::CalibrationOptions{}), "options"));
    const fp8rl::rollout::TokenSequences sequences =
        sequences_from(tokens, offsets, num_sequences, "tokens", "offsets", "num_sequences");
    const std::lock_guard<std::mutex> lock(policy->context->impl.mutex());
    fp8rl::policy::recalibrate_attention_scales(impl, sequences, calibration);
  });
}

}  // extern "C"
