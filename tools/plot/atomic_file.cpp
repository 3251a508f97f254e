#include "tools/plot/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace fp8rl::tools {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int error_number) {
  throw std::runtime_error(path + ": " + what + " failed: " + std::strerror(error_number));
}

std::string temp_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// Writes everything, retrying short writes and EINTR; returns errno or 0.
int write_all(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string temp = temp_name(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(temp, "open", errno);

  const char* step = nullptr;
  int error_number = write_all(fd, bytes.data(), bytes.size());
  if (error_number != 0) {
    step = "write";
  } else if (::fsync(fd) != 0) {  // the data must be on disk before the rename makes it visible
    step = "fsync";
    error_number = errno;
  }
  if (::close(fd) != 0 && step == nullptr) {
    step = "close";
    error_number = errno;
  }
  if (step == nullptr && ::rename(temp.c_str(), path.c_str()) != 0) {
    step = "rename";
    error_number = errno;
  }
  if (step != nullptr) {
    ::unlink(temp.c_str());
    fail(path, step, error_number);
  }
}

}  // namespace fp8rl::tools
