#include "finite_scan.h"

#include "kernels/common/bf16_codec.h"

namespace fp8rl {

int64_t first_non_finite(const void* data, DType dtype, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t bits = dtype == DType::bf16 ? static_cast<uint32_t>(static_cast<const uint16_t*>(data)[i]) << 16
                                               : float_bits(static_cast<const float*>(data)[i]);
    if (!is_finite_bits(bits)) return i;
  }
  return -1;
}

int64_t first_nan_code(const uint8_t* codes, Fp8Format format, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (fp8_is_nan(codes[i], format)) return i;
  return -1;
}

int64_t first_bad_scale(const float* scales, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!is_finite_bits(float_bits(scales[i])) || !(scales[i] > 0.0f)) return i;
  return -1;
}

}  // namespace fp8rl
