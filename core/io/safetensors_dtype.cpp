// safetensors dtype names and sizes.
#include <array>

#include "core/io/safetensors.h"
#include "kernels/error.h"

namespace fp8rl::io {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, 15> kDTypes = {{
    {DType::f64, "F64", 8},
    {DType::f32, "F32", 4},
    {DType::f16, "F16", 2},
    {DType::bf16, "BF16", 2},
    {DType::i64, "I64", 8},
    {DType::i32, "I32", 4},
    {DType::i16, "I16", 2},
    {DType::i8, "I8", 1},
    {DType::u64, "U64", 8},
    {DType::u32, "U32", 4},
    {DType::u16, "U16", 2},
    {DType::u8, "U8", 1},
    {DType::boolean, "BOOL", 1},
    {DType::f8_e4m3, "F8_E4M3", 1},
    {DType::f8_e5m2, "F8_E5M2", 1},
}};

// Defined by safetensors but not byte-addressable or not real-valued.
constexpr std::array<std::string_view, 5> kUnsupported = {"F4", "F6_E2M3", "F6_E3M2", "F8_E8M0", "C64"};

const DTypeInfo& info(DType dtype) {
  for (const DTypeInfo& entry : kDTypes) {
    if (entry.dtype == dtype) return entry;
  }
  fail(Status::invalid_argument, "unknown DType value " + std::to_string(static_cast<int32_t>(dtype)));
}

}  // namespace

size_t dtype_size(DType dtype) { return info(dtype).size; }

std::string_view dtype_name(DType dtype) { return info(dtype).name; }

DType dtype_from_name(std::string_view name) {
  for (const DTypeInfo& entry : kDTypes) {
    if (entry.name == name) return entry.dtype;
  }
  for (const std::string_view unsupported : kUnsupported) {
    if (unsupported == name) fail(Status::unsupported, "unsupported dtype \"" + std::string(name) + "\"");
  }
  fail(Status::corrupt_data, "unknown dtype \"" + std::string(name) + "\"");
}

bool tensor_size_bytes(const std::vector<int64_t>& shape, DType dtype, uint64_t& bytes) {
  uint64_t total = dtype_size(dtype);
  for (const int64_t dim : shape) {
    if (dim < 0) return false;
    const auto extent = static_cast<uint64_t>(dim);
    if (extent != 0 && total > UINT64_MAX / extent) return false;
    total *= extent;
  }
  bytes = total;
  return true;
}

}  // namespace fp8rl::io
