// Whole-file replacement that readers never see half-written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp8rl::tools {

// Writes bytes to a temporary file beside path (path + ".tmp.<pid>.<n>"),
// flushes it to disk, then renames it over path: a reader sees either the old
// file or the complete new one. Throws std::runtime_error naming the path and
// the reason on any I/O failure; the temporary file is removed then.
void write_file_atomically(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace fp8rl::tools
