// fp8rl_importance_options and fp8rl_calibration_options <-> the core's
// options, for every function that takes them, alone or embedded in
// fp8rl_trainer_options. The public defaults are to_public() of the core's
// defaults, so each default is written once, in the core.
#pragma once

#include <string>

#include "core/policy/calibration.h"
#include "core/train/loss_options.h"
#include "fp8rl/fp8rl.h"

namespace fp8rl::capi {

fp8rl_importance_options to_public(const train::ImportanceOptions& options);

// `options` as read_options() or read_embedded_options() returned it; checks
// the mode (the core validates the values). `name` names it in messages.
train::ImportanceOptions importance_from(const fp8rl_importance_options& options, const std::string& name);

fp8rl_calibration_options to_public(const policy::CalibrationOptions& options);

// As importance_from(); the core validates the values.
policy::CalibrationOptions calibration_from(const fp8rl_calibration_options& options);

}  // namespace fp8rl::capi
