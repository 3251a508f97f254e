// Loading a Hugging Face model folder with what it stores beyond FP32
// masters: the FP8 weights of a block-quantized checkpoint
// (core/model/fp8_checkpoint.h), which an FP8 compute copy takes over as stored.
//
// Usage:
//   LoadedCheckpoint checkpoint = load_hf_checkpoint("Qwen3-0.6B-FP8");
//   checkpoint.fp8_weights.at("model.layers.0.mlp.up_proj.weight").codes;  // [out, in] E4M3
#pragma once

#include <map>
#include <string>

#include "core/model/fp8_weight.h"
#include "core/model/model_params.h"

namespace fp8rl::model {

struct LoadedCheckpoint {
  // The FP32 masters; a quantized weight's are its dequantization.
  ModelParams params;
  // The quantized weights as stored, by tensor name ("<module>.weight");
  // empty for an unquantized checkpoint.
  std::map<std::string, Fp8Weight> fp8_weights;
};

// load_hf_model (core/model/model_params.h), which also reads FP8 checkpoints:
// a weight with a weight_scale_inv is F8_E4M3 codes with block scales.
// Besides load_hf_model's errors, naming the file and the tensor: unsupported
// for a quantization_config other than block-wise FP8
// (read_fp8_quantization_config); corrupt_data for a quantized weight
// without a quantization_config, one the library keeps unquantized (not an
// FP8-eligible linear: embeddings, norms, the head, a router), one that
// modules_to_not_convert names, or a malformed pair (read_fp8_weight);
// non_finite for NaN codes or scales, or a dequantized value that overflows.
// An unquantized weight where the checkpoint could have quantized one is
// accepted: the file's dtype says which it is.
LoadedCheckpoint load_hf_checkpoint(const std::string& folder);

}  // namespace fp8rl::model
