// An advisory lock on a model folder (flock on the folder itself): saves
// take it exclusively and loads shared, so that two savers into one folder
// cannot interleave their files and a load never mixes two saves. Best
// effort: where the folder cannot be opened or locked (a file system without
// flock), the operation goes ahead unlocked. The lock is per open, so it
// also orders threads of one process.
#pragma once

#include <string>

namespace fp8rl::io {

class FolderLock {
 public:
  enum class Mode { shared, exclusive };
  FolderLock(const std::string& folder, Mode mode) noexcept;  // blocks until granted
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace fp8rl::io
