// Export of a policy as an FP8 block-quantized Hugging Face checkpoint, the
// layout serving engines load (vLLM and SGLang "fp8" with weight_block_size):
//   <layer>.<proj>.weight            F8_E4M3 [out, in]
//   <layer>.<proj>.weight_scale_inv  F32 [ceil(out / 128), ceil(in / 128)],
//                                    the dequantization multipliers (w ~ code * scale)
// for every q/k/v/o/gate/up/down projection; embeddings, norms, biases and the
// head stay BF16. config.json gains
//   "quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
//                           "activation_scheme": "dynamic", "weight_block_size": [128, 128]}.
// The blocks are quantized from the FP32 master weights with the recipe's
// scale format, exactly as the policy's FP8 compute copies are.
#pragma once

#include <cstdint>
#include <string>

#include "core/policy/policy.h"

namespace fp8rl::policy {

// Errors: io_error for OS failures; the folder is written as save_hf_model
// writes one (atomic files, shards above max_shard_bytes, config.json last).
void export_fp8_checkpoint(Policy& policy, const std::string& folder, int64_t max_shard_bytes = int64_t{5} << 30);

}  // namespace fp8rl::policy
