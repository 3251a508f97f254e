// Checked conversions from the public enums to the internal ones.
#pragma once

#include <string>

#include "core/io/safetensors.h"
#include "core/model/model_config.h"
#include "core/policy/recipe.h"
#include "core/rollout/rollout.h"
#include "fp8rl/fp8rl.h"
#include "kernels/backend.h"

namespace fp8rl::capi {

inline Fp8Format fp8_format_from(fp8rl_dtype dtype, const char* what) {
  require(dtype == FP8RL_DTYPE_E4M3 || dtype == FP8RL_DTYPE_E5M2,
          std::string(what) + " is " + std::to_string(dtype) + "; expected FP8RL_DTYPE_E4M3 or FP8RL_DTYPE_E5M2");
  return dtype == FP8RL_DTYPE_E4M3 ? Fp8Format::e4m3 : Fp8Format::e5m2;
}

inline BlockLayout layout_from(fp8rl_block_layout layout, const char* what) {
  require(layout >= FP8RL_LAYOUT_TILE_1X128 && layout <= FP8RL_LAYOUT_BLOCK_128X128,
          std::string(what) + " is " + std::to_string(layout) + "; expected an fp8rl_block_layout value");
  return static_cast<BlockLayout>(layout);
}

inline ScaleFormat scale_format_from(fp8rl_scale_format format) {
  require(format == FP8RL_SCALE_FP32 || format == FP8RL_SCALE_POW2,
          "options->scale_format is " + std::to_string(format) + "; expected FP32 or POW2");
  return static_cast<ScaleFormat>(format);
}

// F32 or BF16, the element types of unquantized matrices.
inline DType float_dtype_from(fp8rl_dtype dtype, const char* what) {
  require(dtype == FP8RL_DTYPE_F32 || dtype == FP8RL_DTYPE_BF16,
          std::string(what) + " is " + std::to_string(dtype) + "; expected FP8RL_DTYPE_F32 or FP8RL_DTYPE_BF16");
  return dtype == FP8RL_DTYPE_F32 ? DType::f32 : DType::bf16;
}

inline ScaleFormat scale_format_from(fp8rl_scale_format format, const std::string& what) {
  require(format == FP8RL_SCALE_FP32 || format == FP8RL_SCALE_POW2,
          what + " is " + std::to_string(format) + "; expected FP8RL_SCALE_FP32 or FP8RL_SCALE_POW2");
  return static_cast<ScaleFormat>(format);
}

inline fp8rl_scale_format to_public(ScaleFormat format) {
  return format == ScaleFormat::pow2 ? FP8RL_SCALE_POW2 : FP8RL_SCALE_FP32;
}

inline policy::Precision precision_from(fp8rl_precision precision, const std::string& what) {
  require(precision == FP8RL_PRECISION_BF16 || precision == FP8RL_PRECISION_FP8,
          what + " is " + std::to_string(precision) + "; expected FP8RL_PRECISION_BF16 or FP8RL_PRECISION_FP8");
  return precision == FP8RL_PRECISION_FP8 ? policy::Precision::fp8 : policy::Precision::bf16;
}

inline fp8rl_precision to_public(policy::Precision precision) {
  return precision == policy::Precision::fp8 ? FP8RL_PRECISION_FP8 : FP8RL_PRECISION_BF16;
}

inline model::ModelFamily model_family_from(fp8rl_model_family family, const std::string& what) {
  require(family >= FP8RL_MODEL_FAMILY_LLAMA && family <= FP8RL_MODEL_FAMILY_QWEN3,
          what + " is " + std::to_string(family) + "; expected LLAMA, QWEN2 or QWEN3");
  return static_cast<model::ModelFamily>(family);
}

inline model::RopeScalingType rope_scaling_from(fp8rl_rope_scaling type, const std::string& what) {
  require(type == FP8RL_ROPE_SCALING_NONE || type == FP8RL_ROPE_SCALING_LLAMA3,
          what + " is " + std::to_string(type) + "; expected FP8RL_ROPE_SCALING_NONE or FP8RL_ROPE_SCALING_LLAMA3");
  return static_cast<model::RopeScalingType>(type);
}

inline fp8rl_finish_reason to_public(rollout::FinishReason reason) {
  switch (reason) {
    case rollout::FinishReason::stop: return FP8RL_FINISH_STOP;
    case rollout::FinishReason::length: return FP8RL_FINISH_LENGTH;
    case rollout::FinishReason::context_full: return FP8RL_FINISH_CONTEXT_FULL;
  }
  fail(Status::internal, "unknown finish reason " + std::to_string(static_cast<int32_t>(reason)));
}

// The element types a policy's weights can be saved in.
inline io::DType weight_dtype_from(fp8rl_dtype dtype, const char* what) {
  require(dtype == FP8RL_DTYPE_F32 || dtype == FP8RL_DTYPE_BF16,
          std::string(what) + " is " + std::to_string(dtype) + "; expected FP8RL_DTYPE_F32 or FP8RL_DTYPE_BF16");
  return dtype == FP8RL_DTYPE_F32 ? io::DType::f32 : io::DType::bf16;
}

}  // namespace fp8rl::capi
