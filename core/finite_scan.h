// Finds the first NaN or Inf in a host array, so that public entry points can
// reject non-finite input with a message that points at it.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace fp8rl {

// Index of the first non-finite element of `count` elements, or -1.
int64_t first_non_finite(const void* data, DType dtype, int64_t count);
// Index of the first NaN code of `count` FP8 codes, or -1.
int64_t first_nan_code(const uint8_t* codes, Fp8Format format, int64_t count);
// Index of the first scale that is not finite and positive, or -1.
int64_t first_bad_scale(const float* scales, int64_t count);

}  // namespace fp8rl
