#include "finite_scan.h"

#include <algorithm>

#include "kernels/common/bf16_codec.h"

namespace fp8rl {
namespace {

// Scans in chunks whose inner loop has no early exit, so it vectorizes; only
// a chunk that holds a bad element is searched again for its first index.
constexpr int64_t kChunk = 4096;

template <class IsBad>
int64_t first_bad(int64_t count, IsBad is_bad) {
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    const int64_t end = std::min(count, begin + kChunk);
    uint32_t any = 0;
    for (int64_t i = begin; i < end; ++i) any |= static_cast<uint32_t>(is_bad(i));
    if (!any) continue;
    for (int64_t i = begin; i < end; ++i)
      if (is_bad(i)) return i;
  }
  return -1;
}

}  // namespace

int64_t first_non_finite(const void* data, DType dtype, int64_t count) {
  if (dtype == DType::bf16) {
    const auto* values = static_cast<const uint16_t*>(data);
    return first_bad(count, [values](int64_t i) { return (values[i] & 0x7F80u) == 0x7F80u; });
  }
  const auto* values = static_cast<const float*>(data);
  return first_bad(count, [values](int64_t i) { return !is_finite_bits(float_bits(values[i])); });
}

int64_t first_nan_code(const uint8_t* codes, Fp8Format format, int64_t count) {
  return first_bad(count, [codes, format](int64_t i) { return fp8_is_nan(codes[i], format); });
}

int64_t first_bad_scale(const float* scales, int64_t count) {
  return first_bad(count, [scales](int64_t i) {
    const uint32_t bits = float_bits(scales[i]);
    return !is_finite_bits(bits) || (bits & 0x7FFFFFFFu) == 0 || (bits >> 31) != 0;
  });
}

}  // namespace fp8rl
