// Internal helpers shared by the model_params implementation files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp8rl::model::detail {

// "[3, 4]", for messages.
std::string shape_string(const std::vector<int64_t>& shape);

// Hugging Face's file names.
inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kSingleFile = "model.safetensors";
inline constexpr const char* kIndexFile = "model.safetensors.index.json";

// Whether name is a shard file name as Hugging Face and save_hf_model spell
// it: "model-00001-of-00003.safetensors" (5 digits, 1 <= index <= count).
bool is_shard_file_name(const std::string& name);

}  // namespace fp8rl::model::detail
