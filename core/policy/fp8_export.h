// Export of a policy as an FP8 block-quantized Hugging Face checkpoint, in
// the format core/model/fp8_checkpoint.h describes (the one vLLM, SGLang and
// transformers' FineGrainedFP8 load, and load_hf_checkpoint reads back):
//   <layer>.<proj>.weight            F8_E4M3 [out, in]
//   <layer>.<proj>.weight_scale_inv  F32 [ceil(out / 128), ceil(in / 128)],
//                                    the dequantization multipliers (w ~ code * scale)
// for every FP8-eligible linear weight (model::fp8_eligible_weights);
// embeddings, norms, biases and the head stay BF16. config.json gains
// model::fp8_quantization_config_json().
//
// A weight whose FP8 compute copy holds its masters exactly (dequantizes to
// them bit for bit, as a copy loaded from an FP8 checkpoint does) is written
// as that copy; any other (no FP8 copy, or one that lags trained masters) is
// quantized from its FP32 masters with the recipe's scale format, as an FP8
// compute copy would be. So export -> load -> export writes the same bytes,
// and an export always holds the current masters.
#pragma once

#include <cstdint>
#include <string>

#include "core/policy/policy.h"

namespace fp8rl::policy {

// Errors: io_error for OS failures; the folder is written as save_hf_model
// writes one (atomic files, shards above max_shard_bytes, config.json last).
void export_fp8_checkpoint(Policy& policy, const std::string& folder, int64_t max_shard_bytes = int64_t{5} << 30);

}  // namespace fp8rl::policy
