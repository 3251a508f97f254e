// The whole state of a training run at a step boundary, and its checkpoint
// file: what a resumed run needs to continue bit for bit as if it had never
// stopped (the trainer's options are not state: the host passes them again).
//
// The file is one safetensors file: master weights under their Hugging Face
// names (F32), the AdamW moments as "optimizer.exp_avg.<name>" and
// "optimizer.exp_avg_sq.<name>" (F32), the attention scales as
// "attention_scales.q|k|v" (F32, [num_layers]), and in "__metadata__" the
// format version, the model config (config.json's JSON), the recipe, the
// step counters and the RNG state:
//   "format": "fp8rl.training_state", "format_version": "2",
//   "config": config.json text, "recipe": {"linear": "bf16"|"fp8",
//   "scale_format": "fp32"|"pow2", "kv_cache", "attention", "head":
//   "bf16"|"fp8", "bf16_first_layers", "bf16_last_layers": integers} as
//   JSON text (version 1, also read, has no "head": a BF16 one),
//   "steps", "optimizer_steps", "rng_seed", "rng_counter": decimal digits.
// Moments are absent before the first step. write_safetensors makes the save
// atomic: a crash mid-save leaves the previous file intact, and its
// temporary is removed by the next save to the same path.
//
// Usage:
//   save_training_state("run/state.safetensors", trainer.state());
//   TrainingState state = load_training_state("run/state.safetensors");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model_params.h"
#include "core/policy/policy.h"
#include "core/policy/recipe.h"

namespace fp8rl::train {

struct TrainingState {
  model::ModelParams params;  // FP32 master weights (with their config)
  policy::Recipe recipe;
  policy::AttentionScales scales;
  // AdamW moments, one array per tensor of params in model::for_each_tensor
  // order, each the tensor's size; both empty before the first step.
  std::vector<std::vector<float>> exp_avg;
  std::vector<std::vector<float>> exp_avg_sq;
  int64_t optimizer_steps = 0;  // AdamW's step count (steps that updated the weights)
  int64_t steps = 0;            // train steps taken, skipped ones included
  uint64_t rng_seed = 0;        // the trainer's seed stream: seed and next counter
  uint64_t rng_counter = 0;
};

// Writes state to path atomically. Validates first, so that every file it
// writes loads back: invalid_argument when the moments do not match the
// parameters' tensors (or only one of the two is empty), for a bad recipe,
// scales that are not one per layer and > 0, or negative step counts;
// non_finite for NaN/Inf weights, moments or scales (check_model_params
// names the weight); io_error on OS failures. On any error the file at path
// is left as it was.
void save_training_state(const std::string& path, const TrainingState& state);

// Reads and fully validates a checkpoint: io_error when it cannot be read;
// corrupt_data naming the file and the item for a damaged or incomplete file
// (missing tensor or metadata key, wrong dtype or shape, unknown format
// version, malformed config or recipe, a counter that is not plain decimal
// digits within its type's range, wrong number of scales, some but not all
// optimizer moments, a tensor the state has no place for, a config that
// calls for more tensors or bytes than the file holds, checked before
// anything is allocated); unsupported for a
// config naming a model this library does not implement; non_finite for
// NaN/Inf weights, moments or scales, and invalid_argument for scales that
// are not > 0. Metadata keys other than the documented ones are ignored.
TrainingState load_training_state(const std::string& path);

}  // namespace fp8rl::train
