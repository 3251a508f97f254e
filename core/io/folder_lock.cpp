#include "core/io/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace fp8rl::io {

FolderLock::FolderLock(const std::string& folder, Mode mode) noexcept {
  fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) return;
  const int operation = mode == Mode::exclusive ? LOCK_EX : LOCK_SH;
  while (::flock(fd_, operation) != 0 && errno == EINTR) {
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace fp8rl::io
