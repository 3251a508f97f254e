// Checked conversions from the public enums to the internal ones.
#pragma once

#include <string>

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

}  // namespace fp8rl::capi
