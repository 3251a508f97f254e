// BOS/EOS/pad ids of a model folder, from tokenizer_config.json and
// generation_config.json (both optional). Internal to core/text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/text/tokenizer.h"

namespace fp8rl::text {

// `token_to_id` maps a token's text to its id (-1: none). Throws corrupt_data
// for a malformed file or a named token the tokenizer does not have.
SpecialTokenIds load_special_token_ids(const std::string& folder,
                                       const std::function<int32_t(std::string_view)>& token_to_id);

}  // namespace fp8rl::text
