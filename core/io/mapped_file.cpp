#include "core/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "kernels/error.h"

namespace fp8rl::io {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const char* step, int error_number) {
  fail(Status::io_error, path + ": " + step + ": " + std::strerror(error_number));
}

// Closes the descriptor on every path out of the constructor: the mapping
// stays valid after close, so the descriptor is never needed afterwards.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(path, "open", errno);
  const FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) fail_errno(path, "fstat", errno);
  if (!S_ISREG(info.st_mode)) fail(Status::io_error, path + ": not a regular file");
  size_ = static_cast<size_t>(info.st_size);
  if (size_ == 0) return;  // mmap rejects length 0
  void* address = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (address == MAP_FAILED) fail_errno(path, "mmap", errno);
  data_ = static_cast<const uint8_t*>(address);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace fp8rl::io
