#include "convert.h"

#include <cstdint>
#include <string>

#include "kernels/common/bf16_codec.h"
#include "kernels/common/fp8_codec.h"
#include "kernels/error.h"

namespace fp8rl {
namespace {

Fp8Format fp8_format(ElementType type) { return type == ElementType::e4m3 ? Fp8Format::e4m3 : Fp8Format::e5m2; }

bool is_fp8(ElementType type) { return type == ElementType::e4m3 || type == ElementType::e5m2; }

void encode_from_f32(const float* src, void* dst, ElementType type, size_t count, bool saturate) {
  if (type == ElementType::bf16) {
    auto* out = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < count; ++i) out[i] = bf16_encode(src[i]);
    return;
  }
  auto* out = static_cast<uint8_t*>(dst);
  const Fp8Format format = fp8_format(type);
  for (size_t i = 0; i < count; ++i) out[i] = fp8_encode(src[i], format, saturate);
}

void decode_to_f32(const void* src, ElementType type, float* dst, size_t count) {
  if (type == ElementType::bf16) {
    const auto* in = static_cast<const uint16_t*>(src);
    for (size_t i = 0; i < count; ++i) dst[i] = bf16_decode(in[i]);
    return;
  }
  const auto* in = static_cast<const uint8_t*>(src);
  const Fp8Format format = fp8_format(type);
  for (size_t i = 0; i < count; ++i) dst[i] = fp8_decode(in[i], format);
}

}  // namespace

void convert_elements(const void* src, ElementType src_type, void* dst, ElementType dst_type, size_t count,
                      bool saturate) {
  require(src != nullptr, "src is NULL");
  require(dst != nullptr, "dst is NULL");
  // One side is F32: a count whose bytes overflow size_t cannot describe an array.
  require(count <= SIZE_MAX / sizeof(float),
          "count is " + std::to_string(count) + "; its F32 bytes would overflow size_t");
  const bool narrowing = src_type == ElementType::f32 && (dst_type == ElementType::bf16 || is_fp8(dst_type));
  const bool widening = dst_type == ElementType::f32 && (src_type == ElementType::bf16 || is_fp8(src_type));
  if (!narrowing && !widening)
    fail(Status::unsupported, "conversion from dtype " + std::to_string(static_cast<int>(src_type)) + " to dtype " +
                                  std::to_string(static_cast<int>(dst_type)) +
                                  " is not supported: one side must be F32 and the other BF16, E4M3 or E5M2");
  if (narrowing)
    encode_from_f32(static_cast<const float*>(src), dst, dst_type, count, saturate);
  else
    decode_to_f32(src, src_type, static_cast<float*>(dst), count);
}

}  // namespace fp8rl
