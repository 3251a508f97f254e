// The FP8 block-quantized Hugging Face checkpoint format ("fine-grained FP8":
// Qwen3-*-FP8, DeepSeek-V3, transformers' FineGrainedFP8Config, and what
// fp8rl exports), the part both the loader and the exporter must agree on:
//
//   config.json    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
//                                          "activation_scheme": "dynamic",
//                                          "weight_block_size": [128, 128],
//                                          "modules_to_not_convert": [...]}   (optional list)
//   <module>.weight            F8_E4M3 [out, in]
//   <module>.weight_scale_inv  F32 or BF16 [ceil(out / 128), ceil(in / 128)]
//
// weight_scale_inv is, despite its name, the dequantization multiplier:
// value = decode(code) * scale_inv over each 128x128 block (partial blocks at
// the edges), which is amax / 448 as fp8rl computes its block scales.
// Tensors without a weight_scale_inv (embeddings, norms, biases, the head,
// and any module in modules_to_not_convert) are stored as BF16, F16 or F32.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/io/json.h"
#include "core/model/model_params.h"

namespace fp8rl::model {

// What fp8rl reads of a quantization_config (the rest is fixed by the checks).
struct Fp8QuantizationConfig {
  // Modules the checkpoint keeps unquantized: full module names
  // ("model.layers.0.mlp.gate", "lm_head") or dotted parts of them.
  std::vector<std::string> modules_to_not_convert;

  // The entry of modules_to_not_convert that names `module`, or nullptr.
  // An entry names a module when its dot-separated parts occur, in a row, in
  // the module's ("lm_head" names "lm_head", "mlp.gate" names
  // "model.layers.3.mlp.gate" but not "model.layers.3.mlp.gate_proj"); a "*"
  // part stands for any layer or expert number. transformers matches by
  // plain substring, which would make "mlp.gate" name every gate_proj.
  const std::string* excluding_entry(const std::string& module) const;
};

// Reads the quantization_config of config.json at `path` (read and bounded
// like load_model_config). nullopt when there is none. unsupported for a
// quant_method other than "fp8", a weight_block_size other than [128, 128]
// (or none: per-tensor FP8 is another format), an "fmt" other than "e4m3" or
// an activation_scheme other than "dynamic"; corrupt_data for malformed
// fields. Messages name the file and the field.
std::optional<Fp8QuantizationConfig> read_fp8_quantization_config(const std::string& path);

// The quantization_config fp8rl writes (no modules_to_not_convert: every
// FP8-eligible linear is quantized; everything else is not, as transformers
// expects of these checkpoints).
io::Json fp8_quantization_config_json();

// "<module>.weight" -> "<module>.weight_scale_inv".
std::string scale_tensor_name(const std::string& weight_name);

// The weights a checkpoint may store quantized: the FP8-eligible table parts
// each layer has, and every expert projection (the linear layers an FP8
// recipe runs in E4M3). Everything else (embeddings, norms, biases, the head,
// a router) stays unquantized whatever the recipe. params sized by
// size_layers; its tensors may still be empty.
std::set<const HostTensor*> fp8_eligible_weights(const ModelParams& params);

}  // namespace fp8rl::model
