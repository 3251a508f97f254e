// Internal to core/model: the one set of consistency rules behind validate()
// (invalid_argument, a config built in code) and parse_model_config()
// (corrupt_data, a bad file), so both name fields the same way.
#pragma once

#include <string>

#include "core/model/model_config.h"
#include "kernels/error.h"

namespace fp8rl::model::detail {

// Throws Error(status, "<where>: <field> ...") for the first broken rule.
void check_model_config(const ModelConfig& config, Status status, const std::string& where);

}  // namespace fp8rl::model::detail
