// Writing a file so that readers see the old content or the new one, never a
// part: into a temporary "<path>.tmp.<pid>.<n>" in the same folder (unique
// per call, so threads and processes saving at once never share one), held
// under an exclusive flock while it is written, then fsync, rename over the
// path, fsync of the folder. A writer killed mid-write leaves its temporary
// behind unlocked; remove_abandoned_temporaries, called by the next save,
// deletes such files and leaves those of live writers alone.
//
// Usage:
//   AtomicFileWriter writer("out/model.safetensors");
//   writer.write(header.data(), header.size());
//   writer.commit();                                  // or destroy: nothing changes
//   write_file_atomically("out/config.json", text);
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace fp8rl::io {

// Not thread-safe; one writer per thread. Errors: io_error naming the
// temporary or target path with the errno text, or when the target exists
// and is not a regular file (checked at construction and before the rename:
// a save never replaces a device, pipe or folder); the temporary is removed.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  // Without commit(): removes the temporary, leaving path as it was.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  // Makes the written bytes the content of path, durably.
  void commit();

 private:
  std::string path_;
  std::string temp_;
  int fd_ = -1;
  void abandon() noexcept;
};

void write_file_atomically(const std::string& path, const std::string& text);

// Deletes "<target>.tmp.<digits>.<digits>" files in folder whose target name
// satisfies is_target and that no live writer holds locked. Best effort: a
// file that cannot be removed is left (the save itself does not need it
// gone). Never throws.
void remove_abandoned_temporaries(const std::string& folder, const std::function<bool(const std::string&)>& is_target);

}  // namespace fp8rl::io
