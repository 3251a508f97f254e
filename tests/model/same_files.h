// Folder equality for the export round trips: every file, byte for byte.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "io/io_test_support.h"

namespace fp8rl::test {

inline std::vector<std::string> sorted_file_names(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

inline void check_same_files(const std::string& a, const std::string& b) {
  const std::vector<std::string> names = sorted_file_names(a);
  REQUIRE(names == sorted_file_names(b));
  for (const std::string& name : names) {
    CAPTURE(name);
    CHECK(read_bytes(a + "/" + name) == read_bytes(b + "/" + name));
  }
}

}  // namespace fp8rl::test
