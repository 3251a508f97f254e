// fp8rl_model_config <-> model::ModelConfig, with every value read from C
// checked before it is cast.
#pragma once

#include "core/model/model_config.h"
#include "fp8rl/fp8rl.h"

namespace fp8rl::capi {

// Reads a caller's struct (honouring struct_size) and validates the result
// (model::validate): invalid_argument naming the field.
model::ModelConfig model_config_from(const fp8rl_model_config* config, const char* name);

// The public form of a config; head_dim is 0 when implied. Throws
// unsupported for more EOS tokens than the struct holds.
fp8rl_model_config to_public(const model::ModelConfig& config);

fp8rl_model_config default_model_config();

}  // namespace fp8rl::capi
