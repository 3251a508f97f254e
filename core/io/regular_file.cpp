#include "core/io/regular_file.h"

#include <fcntl.h>
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

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

void require_regular(const std::string& path, const struct stat& info) {
  if (!S_ISREG(info.st_mode)) {
    fail(Status::io_error, path + ": is " + std::string(file_kind(info.st_mode)) + ", not a regular file");
  }
}

}  // namespace

void require_regular_or_absent(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    require_regular(path, info);
  } else if (errno != ENOENT) {
    fail_errno(path, "stat", errno);
  }
}

RegularFile::RegularFile(const std::string& path) : path_(path) {
  // stat first: open() on a FIFO would block until a writer appears.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) fail_errno(path, "stat", errno);
  require_regular(path, info);
  // O_NONBLOCK in case the path became a FIFO after the stat; it has no
  // effect on reads from a regular file.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) fail_errno(path, "open", errno);
  if (::fstat(fd_, &info) != 0) {
    const int error_number = errno;
    release();
    fail_errno(path, "fstat", error_number);
  }
  if (!S_ISREG(info.st_mode)) {
    release();
    require_regular(path, info);
  }
  size_ = static_cast<uint64_t>(info.st_size);
}

RegularFile::~RegularFile() { release(); }

RegularFile::RegularFile(RegularFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(std::exchange(other.size_, 0)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void RegularFile::release() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void RegularFile::read_at(uint64_t offset, void* destination, size_t count) const {
  auto* bytes = static_cast<uint8_t*>(destination);
  while (count > 0) {
    const ssize_t got = ::pread(fd_, bytes, count, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail_errno(path_, "read", errno);
    }
    if (got == 0) {
      fail(Status::io_error, path_ + ": the file shrank while being read (it ends before byte " +
                                 std::to_string(offset + count) + " of the " + std::to_string(size_) +
                                 " it had when opened); was it rewritten during the load?");
    }
    bytes += got;
    offset += static_cast<uint64_t>(got);
    count -= static_cast<size_t>(got);
  }
}

std::string read_small_file(const std::string& path, size_t max_bytes) {
  const RegularFile file(path);
  if (file.size() > max_bytes) {
    fail(Status::corrupt_data, path + ": " + std::to_string(file.size()) + " bytes, above the limit of " +
                                   std::to_string(max_bytes) + " for this file");
  }
  std::string text(static_cast<size_t>(file.size()), '\0');
  file.read_at(0, text.data(), text.size());
  return text;
}

}  // namespace fp8rl::io
