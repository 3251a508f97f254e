// Checked conversions from the public enums to the internal ones.
//
// A C caller may put any 32-bit integer in an enum field or argument. Every
// public enum is int32_t underneath (FP8RL_ENUM_INT32 in the header), so
// each such value is one the C++ enum holds and reading it is defined; the
// checks below compare that raw integer with the enumerators before anything
// becomes an internal enum.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/io/safetensors.h"
#include "core/model/model_config.h"
#include "core/policy/recipe.h"
#include "core/rollout/rollout.h"
#include "fp8rl/fp8rl.h"
#include "kernels/backend.h"

namespace fp8rl::capi {

// The integer a C caller stored in a public enum.
template <class Enum>
constexpr int32_t raw(Enum value) {
  static_assert(std::is_same_v<std::underlying_type_t<Enum>, int32_t>,
                "public enums must be int32_t underneath (FP8RL_ENUM_INT32), or out-of-range values are UB to read");
  return static_cast<int32_t>(value);
}

// The enums of every struct field and argument the library reads.
static_assert(std::is_same_v<std::underlying_type_t<fp8rl_status>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_dtype>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_scale_format>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_backend>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_log_level>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_model_family>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_rope_scaling>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_precision>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_importance_mode>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_loss_kind>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_kl_estimator>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_aggregation>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_advantage_baseline>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_lr_schedule>, int32_t> &&
              std::is_same_v<std::underlying_type_t<fp8rl_block_layout>, int32_t>);

// "what is -1; expected ..." for a refused enum value.
inline std::string enum_message(const std::string& what, int32_t value, const char* expected) {
  return what + " is " + std::to_string(value) + "; expected " + expected;
}

inline Fp8Format fp8_format_from(fp8rl_dtype dtype, const char* what) {
  const int32_t v = raw(dtype);
  require(v == FP8RL_DTYPE_E4M3 || v == FP8RL_DTYPE_E5M2,
          enum_message(what, v, "FP8RL_DTYPE_E4M3 or FP8RL_DTYPE_E5M2"));
  return v == FP8RL_DTYPE_E4M3 ? Fp8Format::e4m3 : Fp8Format::e5m2;
}

inline BlockLayout layout_from(fp8rl_block_layout layout, const std::string& what) {
  const int32_t v = raw(layout);
  require(v >= FP8RL_LAYOUT_TILE_1X128 && v <= FP8RL_LAYOUT_BLOCK_128X128,
          enum_message(what, v, "an fp8rl_block_layout value"));
  return static_cast<BlockLayout>(v);
}

// F32 or BF16, the element types of unquantized matrices.
inline DType float_dtype_from(fp8rl_dtype dtype, const char* what) {
  const int32_t v = raw(dtype);
  require(v == FP8RL_DTYPE_F32 || v == FP8RL_DTYPE_BF16, enum_message(what, v, "FP8RL_DTYPE_F32 or FP8RL_DTYPE_BF16"));
  return v == FP8RL_DTYPE_F32 ? DType::f32 : DType::bf16;
}

inline ScaleFormat scale_format_from(fp8rl_scale_format format, const std::string& what) {
  const int32_t v = raw(format);
  require(v == FP8RL_SCALE_FP32 || v == FP8RL_SCALE_POW2, enum_message(what, v, "FP8RL_SCALE_FP32 or FP8RL_SCALE_POW2"));
  return static_cast<ScaleFormat>(v);
}

inline fp8rl_scale_format to_public(ScaleFormat format) {
  return format == ScaleFormat::pow2 ? FP8RL_SCALE_POW2 : FP8RL_SCALE_FP32;
}

inline policy::Precision precision_from(fp8rl_precision precision, const std::string& what) {
  const int32_t v = raw(precision);
  require(v == FP8RL_PRECISION_BF16 || v == FP8RL_PRECISION_FP8,
          enum_message(what, v, "FP8RL_PRECISION_BF16 or FP8RL_PRECISION_FP8"));
  return v == FP8RL_PRECISION_FP8 ? policy::Precision::fp8 : policy::Precision::bf16;
}

inline fp8rl_precision to_public(policy::Precision precision) {
  return precision == policy::Precision::fp8 ? FP8RL_PRECISION_FP8 : FP8RL_PRECISION_BF16;
}

inline model::ModelFamily model_family_from(fp8rl_model_family family, const std::string& what) {
  const int32_t v = raw(family);
  require(v >= FP8RL_MODEL_FAMILY_LLAMA && v <= FP8RL_MODEL_FAMILY_QWEN3_MOE,
          enum_message(what, v, "LLAMA, QWEN2, QWEN3 or QWEN3_MOE"));
  return static_cast<model::ModelFamily>(v);
}

inline model::RopeScalingType rope_scaling_from(fp8rl_rope_scaling type, const std::string& what) {
  const int32_t v = raw(type);
  require(v == FP8RL_ROPE_SCALING_NONE || v == FP8RL_ROPE_SCALING_LLAMA3,
          enum_message(what, v, "FP8RL_ROPE_SCALING_NONE or FP8RL_ROPE_SCALING_LLAMA3"));
  return static_cast<model::RopeScalingType>(v);
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
  const int32_t v = raw(dtype);
  require(v == FP8RL_DTYPE_F32 || v == FP8RL_DTYPE_BF16, enum_message(what, v, "FP8RL_DTYPE_F32 or FP8RL_DTYPE_BF16"));
  return v == FP8RL_DTYPE_F32 ? io::DType::f32 : io::DType::bf16;
}

}  // namespace fp8rl::capi
