// A regular file opened for reading with pread, never memory-mapped: a file
// that another process truncates while it is read gives an io_error instead
// of killing the host with SIGBUS, and a named pipe, device or folder in its
// place is refused before open() could block on it.
//
// Usage:
//   RegularFile file("model.safetensors");           // [size() bytes]
//   file.read_at(offset, destination, count);        // exactly count bytes or io_error
//   std::string text = read_small_file("config.json", 1 << 20);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fp8rl::io {

class RegularFile {
 public:
  // Throws fp8rl::Error(Status::io_error, "<path>: <problem>") when the path
  // is missing, is not a regular file (checked before opening and again on
  // the open descriptor, so a swap in between is caught) or cannot be opened.
  explicit RegularFile(const std::string& path);
  ~RegularFile();
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  const std::string& path() const noexcept { return path_; }
  // The size when the file was opened: what a reader validates offsets against.
  uint64_t size() const noexcept { return size_; }

  // Reads exactly count bytes at offset into destination. io_error with the
  // errno text on a read failure, and when the file ends early (it shrank
  // after it was opened). Thread-safe: pread keeps no shared file position.
  void read_at(uint64_t offset, void* destination, size_t count) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  void release() noexcept;
};

// Throws io_error ("<path>: is a character device, not a regular file") when
// path names something other than a regular file (symlinks followed); a
// missing path passes. What a save checks before it replaces path: renaming a
// file over a device node or a named pipe would replace it, and a root
// process may do so in /dev.
void require_regular_or_absent(const std::string& path);

// The whole file as text; corrupt_data naming the limit when it is larger
// than max_bytes (checked before anything is read), io_error as above.
std::string read_small_file(const std::string& path, size_t max_bytes);

}  // namespace fp8rl::io
