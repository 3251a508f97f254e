// A read-only memory mapping of a whole file (POSIX), unmapped and closed on
// destruction. Lets a reader hand out views into multi-GiB checkpoints
// without copying them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fp8rl::io {

class MappedFile {
 public:
  // Throws fp8rl::Error(Status::io_error, "<path>: <step>: <errno text>").
  // An empty file is valid and maps to data() == nullptr, size() == 0.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void release() noexcept;
};

}  // namespace fp8rl::io
