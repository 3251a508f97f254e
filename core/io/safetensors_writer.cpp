// write_safetensors: builds the header with the JSON writer, then writes
// prefix, header and data through an AtomicFileWriter.
#include <algorithm>

#include "core/io/atomic_file.h"
#include "core/io/json.h"
#include "core/io/safetensors.h"
#include "kernels/error.h"

namespace fp8rl::io {
namespace {

void validate(const std::vector<SafetensorsTensorData>& sorted) {
  for (size_t i = 0; i < sorted.size(); ++i) {
    const SafetensorsTensorData& tensor = sorted[i];
    const std::string where = "write_safetensors: tensor \"" + tensor.name + "\"";
    require(tensor.name != "__metadata__", where + ": name is reserved");
    require(i == 0 || sorted[i - 1].name != tensor.name, where + ": duplicate name");
    uint64_t expected = 0;
    require(tensor_size_bytes(tensor.shape, tensor.dtype, expected), where + ": negative or overflowing shape");
    require(tensor.size_bytes == expected, where + ": size_bytes " + std::to_string(tensor.size_bytes) +
                                               " does not match shape and dtype (" + std::to_string(expected) + ")");
    require(tensor.data != nullptr || expected == 0, where + ": data is null");
  }
}

// The JSON header padded with spaces so that 8 + its length is a multiple of
// 8: the data area then starts 8-byte aligned in the file and in a mapping.
std::string build_header(const std::vector<SafetensorsTensorData>& sorted,
                         const std::map<std::string, std::string, std::less<>>& metadata) {
  std::vector<Json::Member> members;
  if (!metadata.empty()) {
    std::vector<Json::Member> entries;
    for (const auto& [key, value] : metadata) entries.emplace_back(key, Json::string(value));
    members.emplace_back("__metadata__", Json::object(std::move(entries)));
  }
  int64_t offset = 0;
  for (const SafetensorsTensorData& tensor : sorted) {
    std::vector<Json> shape;
    for (const int64_t dim : tensor.shape) shape.push_back(Json::integer(dim));
    const int64_t end = offset + static_cast<int64_t>(tensor.size_bytes);
    members.emplace_back(tensor.name, Json::object({
                                          {"dtype", Json::string(std::string(dtype_name(tensor.dtype)))},
                                          {"shape", Json::array(std::move(shape))},
                                          {"data_offsets", Json::array({Json::integer(offset), Json::integer(end)})},
                                      }));
    offset = end;
  }
  std::string header = write_json(Json::object(std::move(members)));
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

}  // namespace

void write_safetensors(const std::string& path, std::vector<SafetensorsTensorData> tensors,
                       const std::map<std::string, std::string, std::less<>>& metadata) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  validate(tensors);
  const std::string header = build_header(tensors, metadata);

  uint8_t prefix[8];
  for (size_t i = 0; i < 8; ++i) prefix[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  AtomicFileWriter writer(path);
  writer.write(prefix, sizeof prefix);
  writer.write(header.data(), header.size());
  for (const SafetensorsTensorData& tensor : tensors) writer.write(tensor.data, tensor.size_bytes);
  writer.commit();
}

}  // namespace fp8rl::io
