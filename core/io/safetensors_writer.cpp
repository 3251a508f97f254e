// write_safetensors: builds the header with the JSON writer, then writes
// prefix, header and data to a temporary file that is renamed into place.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/io/json.h"
#include "core/io/safetensors.h"
#include "kernels/error.h"

namespace fp8rl::io {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const char* step, int error_number) {
  fail(Status::io_error, path + ": " + step + ": " + std::strerror(error_number));
}

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

// Writes all bytes, retrying short writes and EINTR.
void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail_errno(path, "write", errno);
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

void write_contents(int fd, const std::string& temp, const std::string& header,
                    const std::vector<SafetensorsTensorData>& sorted) {
  uint8_t prefix[8];
  for (size_t i = 0; i < 8; ++i) prefix[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  write_all(fd, prefix, sizeof prefix, temp);
  write_all(fd, header.data(), header.size(), temp);
  for (const SafetensorsTensorData& tensor : sorted) write_all(fd, tensor.data, tensor.size_bytes, temp);
  // Data must be on disk before the rename makes the file visible.
  if (::fsync(fd) != 0) fail_errno(temp, "fsync", errno);
}

// A name no other writer in this process or another one uses at the same time.
std::string temp_path_for(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

}  // namespace

void write_safetensors(const std::string& path, std::vector<SafetensorsTensorData> tensors,
                       const std::map<std::string, std::string, std::less<>>& metadata) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  validate(tensors);
  const std::string header = build_header(tensors, metadata);

  const std::string temp = temp_path_for(path);
  // 0666 so the process umask decides the final permissions, as for any new file.
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail_errno(temp, "open", errno);
  try {
    write_contents(fd, temp, header, tensors);
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int error_number = errno;
    ::unlink(temp.c_str());
    fail_errno(temp, "close", error_number);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error_number = errno;
    ::unlink(temp.c_str());
    fail_errno(path, "rename", error_number);
  }
}

}  // namespace fp8rl::io
