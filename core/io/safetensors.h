// The safetensors checkpoint format (Hugging Face):
//   [8 bytes: header length N, little-endian u64]
//   [N bytes: JSON object  name -> {"dtype", "shape", "data_offsets": [begin, end]},
//             plus an optional "__metadata__" string -> string map]
//   [data area: offsets are relative to its first byte]
//
// Usage:
//   SafetensorsReader reader("model.safetensors");
//   const SafetensorsTensor& w = reader.tensor("lm_head.weight");  // w.shape: [vocab, hidden]
//   write_safetensors("out.safetensors", {{"w", DType::f32, {2, 3}, bytes, 24}});
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/regular_file.h"

namespace fp8rl::io {

// Element types named by safetensors. Explicit values: they may be stored.
enum class DType : int32_t {
  f64 = 0,
  f32 = 1,
  f16 = 2,
  bf16 = 3,
  i64 = 4,
  i32 = 5,
  i16 = 6,
  i8 = 7,
  u64 = 8,
  u32 = 9,
  u16 = 10,
  u8 = 11,
  boolean = 12,
  f8_e4m3 = 13,  // OCP e4m3fn, safetensors "F8_E4M3"
  f8_e5m2 = 14,
};

size_t dtype_size(DType dtype);            // bytes per element
std::string_view dtype_name(DType dtype);  // the safetensors spelling, e.g. "BF16"
// Throws corrupt_data for an unknown name and unsupported for names that
// safetensors defines but this library cannot hold (sub-byte and complex
// types: "F4", "F6_E2M3", "F6_E3M2", "F8_E8M0", "C64").
DType dtype_from_name(std::string_view name);

// Sets bytes = product(shape) * dtype_size(dtype); false when a dimension is
// negative or the product overflows uint64.
bool tensor_size_bytes(const std::vector<int64_t>& shape, DType dtype, uint64_t& bytes);

// Where one tensor lies in a reader's file. Row-major, dense; its bytes are
// read with SafetensorsReader::read.
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::u8;
  std::vector<int64_t> shape;  // [] for a scalar; entries >= 0
  uint64_t file_offset = 0;    // of its first byte, from the start of the file
  size_t size_bytes = 0;       // element count * dtype_size(dtype)
};

struct SafetensorsLimits {
  // Larger headers are rejected before they are parsed (real headers of
  // 100k-tensor checkpoints stay well under 10 MiB).
  uint64_t max_header_bytes = 100u << 20;
};

// Opens a .safetensors file (a regular file: see RegularFile) and validates
// the whole header before exposing any tensor; tensor bytes are read with
// pread, so a file truncated during the load is an io_error, not a crash: every check failure throws
// fp8rl::Error(Status::corrupt_data, "<path>: <problem>"), OS failures
// Status::io_error. Tensors must tile the data area exactly (no overlap, no
// gap, no trailing bytes), as the reference implementation requires, so
// every byte of the file is accounted for, and no tensor can claim more
// bytes than the file holds. Not thread-safe to construct; const access
// (read included) is safe from several threads.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path, const SafetensorsLimits& limits = {});

  const std::string& path() const noexcept { return file_.path(); }
  // All tensors, in data order.
  const std::vector<SafetensorsTensor>& tensors() const noexcept { return tensors_; }
  // nullptr when absent.
  const SafetensorsTensor* find(std::string_view name) const;
  // Throws invalid_argument naming the tensor and the file when absent.
  const SafetensorsTensor& tensor(std::string_view name) const;
  const std::map<std::string, std::string, std::less<>>& metadata() const noexcept { return metadata_; }
  uint64_t file_size() const noexcept { return file_.size(); }

  // Copies count bytes of tensor, starting at its byte `begin`, into
  // destination. invalid_argument when the range is outside the tensor;
  // io_error when the file changed underneath (shorter than when opened).
  void read(const SafetensorsTensor& tensor, size_t begin, void* destination, size_t count) const;
  // All of tensor's bytes.
  std::vector<uint8_t> read(const SafetensorsTensor& tensor) const;

 private:
  RegularFile file_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string, std::less<>> metadata_;
};

// One tensor to write: data points at size_bytes bytes, caller-owned, read
// only during the call.
struct SafetensorsTensorData {
  std::string name;
  DType dtype = DType::u8;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t size_bytes = 0;
};

// Writes tensors sorted by name, contiguous in that order, with the header
// padded by spaces to a multiple of 8 bytes (so data starts 8-aligned), as the
// reference implementation does. Atomic (core/io/atomic_file.h): readers
// never see a partial file, and concurrent writers never share a temporary. Throws invalid_argument for a bad tensor (duplicate or
// reserved name, size not matching shape and dtype), io_error with the errno
// text for OS failures (the temporary file is removed).
void write_safetensors(const std::string& path, std::vector<SafetensorsTensorData> tensors,
                       const std::map<std::string, std::string, std::less<>>& metadata = {});

}  // namespace fp8rl::io
