// Elementwise conversion between F32 and BF16 / E4M3 / E5M2 on host arrays.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8rl {

enum class ElementType : int32_t { f32 = 0, bf16 = 1, e4m3 = 2, e5m2 = 3 };

// Throws Error(unsupported) for pairs other than F32 <-> {BF16, E4M3, E5M2}.
void convert_elements(const void* src, ElementType src_type, void* dst, ElementType dst_type, size_t count,
                      bool saturate);

}  // namespace fp8rl
