// SafetensorsReader: reads the header with pread and validates it
// completely before any tensor becomes visible, so a malformed file fails in
// the constructor instead of at first use.
#include <algorithm>

#include "core/io/json.h"
#include "core/io/safetensors.h"
#include "kernels/error.h"

namespace fp8rl::io {
namespace {

constexpr uint64_t kPrefixBytes = 8;  // the little-endian header length

struct Layout {
  const std::string& path;
  uint64_t data_start;  // file offset of the data area
  uint64_t data_bytes;
};

[[noreturn]] void corrupt(const std::string& path, const std::string& problem) {
  fail(Status::corrupt_data, path + ": " + problem);
}

uint64_t read_le64(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// The header bytes, after checking the length prefix against file and limit
// (so a forged length allocates nothing the file does not hold).
std::string header_text(const RegularFile& file, const SafetensorsLimits& limits) {
  const std::string& path = file.path();
  if (file.size() < kPrefixBytes) {
    corrupt(path, "file is " + std::to_string(file.size()) + " bytes, shorter than the 8-byte header length");
  }
  uint8_t prefix[kPrefixBytes];
  file.read_at(0, prefix, sizeof prefix);
  const uint64_t length = read_le64(prefix);
  if (length > limits.max_header_bytes) {
    corrupt(path, "header length " + std::to_string(length) + " exceeds the limit of " +
                      std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (length > file.size() - kPrefixBytes) {
    corrupt(path, "header length " + std::to_string(length) + " runs beyond the end of the file (" +
                      std::to_string(file.size()) + " bytes)");
  }
  std::string text(static_cast<size_t>(length), '\0');
  file.read_at(kPrefixBytes, text.data(), text.size());
  return text;
}

std::map<std::string, std::string, std::less<>> parse_metadata(const Json& value, const std::string& path) {
  if (!value.is_object()) corrupt(path, "\"__metadata__\" is not an object");
  std::map<std::string, std::string, std::less<>> metadata;
  for (const auto& [key, entry] : value.items()) {
    if (!entry.is_string()) corrupt(path, "\"__metadata__\" value of \"" + key + "\" is not a string");
    metadata.emplace(key, entry.as_string());
  }
  return metadata;
}

// Non-negative int64 or a corrupt_data error naming the field.
int64_t non_negative_integer(const Json& value, const std::string& path, const std::string& field) {
  if (!value.is_int64() || value.as_int64() < 0) {
    corrupt(path, field + " must be a non-negative integer, got " + write_json(value));
  }
  return value.as_int64();
}

const Json& member(const Json& entry, const char* key, const std::string& path, const std::string& where) {
  const Json* value = entry.find(key);
  if (!value) corrupt(path, where + ": missing \"" + key + "\"");
  return *value;
}

DType parse_dtype(const Json& value, const std::string& path, const std::string& where) {
  if (!value.is_string()) corrupt(path, where + ": dtype is not a string");
  try {
    return dtype_from_name(value.as_string());
  } catch (const Error& error) {
    fail(error.status(), path + ": " + where + ": " + error.what());
  }
}

std::vector<int64_t> parse_shape(const Json& value, const std::string& path, const std::string& where) {
  if (!value.is_array()) corrupt(path, where + ": shape is not an array");
  std::vector<int64_t> shape;
  for (const Json& dim : value.elements()) shape.push_back(non_negative_integer(dim, path, where + ": shape entry"));
  return shape;
}

// Builds one tensor view; checks its offsets against its own size and the
// data area (overlaps between tensors are checked afterwards).
SafetensorsTensor parse_tensor(const std::string& name, const Json& entry, const Layout& layout, uint64_t& begin_out) {
  const std::string& path = layout.path;
  const std::string where = "tensor \"" + name + "\"";
  if (!entry.is_object()) corrupt(path, where + ": entry is not an object");
  // Strict: an unknown field may mean a format revision we would misread.
  for (const auto& field : entry.items()) {
    if (field.first != "dtype" && field.first != "shape" && field.first != "data_offsets") {
      corrupt(path, where + ": unknown field \"" + field.first + "\"");
    }
  }
  SafetensorsTensor tensor;
  tensor.name = name;
  tensor.dtype = parse_dtype(member(entry, "dtype", path, where), path, where);
  tensor.shape = parse_shape(member(entry, "shape", path, where), path, where);
  uint64_t expected = 0;
  if (!tensor_size_bytes(tensor.shape, tensor.dtype, expected)) corrupt(path, where + ": element count overflows");

  const Json& offsets = member(entry, "data_offsets", path, where);
  if (!offsets.is_array() || offsets.size() != 2) corrupt(path, where + ": data_offsets is not [begin, end]");
  const auto begin = static_cast<uint64_t>(non_negative_integer(offsets.at(0), path, where + ": data_offsets begin"));
  const auto end = static_cast<uint64_t>(non_negative_integer(offsets.at(1), path, where + ": data_offsets end"));
  if (begin > end)
    corrupt(path, where + ": data_offsets begin " + std::to_string(begin) + " > end " + std::to_string(end));
  if (end > layout.data_bytes) {
    corrupt(path, where + ": data_offsets end " + std::to_string(end) + " is beyond the data area of " +
                      std::to_string(layout.data_bytes) + " bytes");
  }
  if (end - begin != expected) {
    corrupt(path, where + ": data_offsets span " + std::to_string(end - begin) + " bytes but dtype and shape need " +
                      std::to_string(expected));
  }
  tensor.file_offset = layout.data_start + begin;
  tensor.size_bytes = static_cast<size_t>(expected);
  begin_out = begin;
  return tensor;
}

// Tensors sorted by offset must tile [0, data_bytes) exactly.
void check_tiling(const std::vector<SafetensorsTensor>& tensors, const Layout& layout) {
  uint64_t cursor = 0;
  const SafetensorsTensor* previous = nullptr;
  for (const SafetensorsTensor& tensor : tensors) {
    const uint64_t begin = tensor.file_offset - layout.data_start;
    if (begin < cursor) {
      corrupt(layout.path, "tensor \"" + tensor.name + "\" overlaps tensor \"" + previous->name + "\"");
    }
    if (begin > cursor) {
      corrupt(layout.path, "gap of " + std::to_string(begin - cursor) + " bytes before tensor \"" + tensor.name + "\"");
    }
    cursor = begin + tensor.size_bytes;
    previous = &tensor;
  }
  if (cursor != layout.data_bytes) {
    corrupt(layout.path, std::to_string(layout.data_bytes - cursor) + " unused bytes at the end of the data area");
  }
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::string& path, const SafetensorsLimits& limits) : file_(path) {
  const std::string header = header_text(file_, limits);
  const Json root = parse_json(header, path + ": header", JsonLimits{header.size(), 128});
  if (!root.is_object()) corrupt(path, "header is not a JSON object");

  const uint64_t data_start = kPrefixBytes + header.size();
  const Layout layout{file_.path(), data_start, file_.size() - data_start};
  std::vector<std::pair<uint64_t, SafetensorsTensor>> found;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      metadata_ = parse_metadata(entry, path);
      continue;
    }
    uint64_t begin = 0;
    SafetensorsTensor tensor = parse_tensor(name, entry, layout, begin);
    found.emplace_back(begin, std::move(tensor));
  }
  // Sort by (begin, size) so empty tensors come before a tensor that starts
  // at the same offset and do not count as overlapping it.
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.size_bytes < b.second.size_bytes;
  });
  for (auto& entry : found) tensors_.push_back(std::move(entry.second));
  check_tiling(tensors_, layout);
  for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const SafetensorsTensor* SafetensorsReader::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsReader::read(const SafetensorsTensor& tensor, size_t begin, void* destination, size_t count) const {
  require(begin <= tensor.size_bytes && count <= tensor.size_bytes - begin,
          path() + ": read of bytes [" + std::to_string(begin) + ", +" + std::to_string(count) + ") is outside tensor \"" +
              tensor.name + "\" of " + std::to_string(tensor.size_bytes) + " bytes");
  file_.read_at(tensor.file_offset + begin, destination, count);
}

std::vector<uint8_t> SafetensorsReader::read(const SafetensorsTensor& tensor) const {
  std::vector<uint8_t> bytes(tensor.size_bytes);
  read(tensor, 0, bytes.data(), bytes.size());
  return bytes;
}

const SafetensorsTensor& SafetensorsReader::tensor(std::string_view name) const {
  const SafetensorsTensor* found = find(name);
  if (!found) fail(Status::invalid_argument, path() + ": no tensor named \"" + std::string(name) + "\"");
  return *found;
}

}  // namespace fp8rl::io
