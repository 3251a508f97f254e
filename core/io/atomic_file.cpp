#include "core/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "core/io/regular_file.h"
#include "kernels/error.h"

namespace fp8rl::io {
namespace {

constexpr std::string_view kTempMarker = ".tmp.";

[[noreturn]] void fail_errno(const std::string& path, const char* step, int error_number) {
  fail(Status::io_error, path + ": " + step + ": " + std::strerror(error_number));
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string next_temp_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + std::string(kTempMarker) + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// True for "<digits>.<digits>": the suffix next_temp_name appends.
bool is_temp_suffix(std::string_view suffix) {
  const size_t dot = suffix.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    if (i != dot && (suffix[i] < '0' || suffix[i] > '9')) return false;
  }
  return true;
}

// Makes the rename durable (best effort: some file systems refuse fsync on folders).
void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Removes one temporary if no writer holds its lock and the name still
// refers to the file that was locked (a writer may have renamed it meanwhile).
void remove_if_abandoned(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat locked {}, named {};
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &locked) == 0 && S_ISREG(locked.st_mode) &&
      ::lstat(path.c_str(), &named) == 0 && named.st_ino == locked.st_ino && named.st_dev == locked.st_dev) {
    ::unlink(path.c_str());
  }
  ::close(fd);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  require_regular_or_absent(path_);
  // A cleaner may unlink a temporary between its creation and our lock; the
  // link count tells, and a fresh name is taken.
  for (;;) {
    temp_ = next_temp_name(path_);
    // 0666 so the process umask decides the final permissions, as for any new file.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) fail_errno(temp_, "open", errno);
    struct stat info {};
    if (::flock(fd_, LOCK_EX) != 0 || ::fstat(fd_, &info) != 0) {
      const int error_number = errno;
      abandon();
      fail_errno(temp_, "lock", error_number);
    }
    if (info.st_nlink > 0) return;
    ::close(fd_);
    fd_ = -1;
  }
}

AtomicFileWriter::~AtomicFileWriter() { abandon(); }

void AtomicFileWriter::abandon() noexcept {
  if (fd_ < 0) return;
  ::unlink(temp_.c_str());
  ::close(fd_);
  fd_ = -1;
}

void AtomicFileWriter::write(const void* data, size_t size) {
  require(fd_ >= 0, path_ + ": write to a writer already committed or failed");
  const auto* bytes = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      const int error_number = errno;
      abandon();
      fail_errno(temp_, "write", error_number);
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

void AtomicFileWriter::commit() {
  require(fd_ >= 0, path_ + ": commit of a writer already committed or failed");
  // Data on disk before the rename makes it visible.
  if (::fsync(fd_) != 0) {
    const int error_number = errno;
    abandon();
    fail_errno(temp_, "fsync", error_number);
  }
  // Renamed while still locked, so no cleaner can take it for abandoned.
  // Checked again: something other than a file may have appeared meanwhile.
  try {
    require_regular_or_absent(path_);
  } catch (...) {
    abandon();
    throw;
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int error_number = errno;
    abandon();
    fail_errno(path_, "rename", error_number);
  }
  const int error_number = ::close(fd_) == 0 ? 0 : errno;
  fd_ = -1;
  if (error_number != 0) fail_errno(path_, "close", error_number);
  sync_folder(folder_of(path_));
}

void write_file_atomically(const std::string& path, const std::string& text) {
  AtomicFileWriter writer(path);
  writer.write(text.data(), text.size());
  writer.commit();
}

void remove_abandoned_temporaries(const std::string& folder, const std::function<bool(const std::string&)>& is_target) {
  DIR* listing = ::opendir(folder.c_str());
  if (listing == nullptr) return;
  std::vector<std::string> abandoned;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name(entry->d_name);
    const size_t marker = name.rfind(kTempMarker);
    if (marker == std::string_view::npos || marker == 0) continue;
    if (!is_temp_suffix(name.substr(marker + kTempMarker.size()))) continue;
    if (is_target(std::string(name.substr(0, marker)))) abandoned.emplace_back(name);
  }
  ::closedir(listing);
  for (const std::string& name : abandoned) remove_if_abandoned(folder + "/" + name);
}

}  // namespace fp8rl::io
