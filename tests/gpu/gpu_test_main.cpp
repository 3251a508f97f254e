// Driver of the GPU suite. Listing the tests works anywhere (ctest discovers
// them at build time, on machines without a GPU too); running them needs a
// CUDA device, and without one the suite reports itself skipped (exit 77,
// ctest's SKIP_RETURN_CODE in tests/CMakeLists.txt).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "kernels/cuda/cuda_backend.h"

namespace {

constexpr int kSkipped = 77;

// doctest options that only print (lists, counts, help, version), in any
// spelling doctest accepts: -x, --x, --dt-x, with or without =value.
bool only_prints(int argc, char** argv) {
  static const char* const kPrintOnly[] = {
      "list-test-cases", "ltc", "list-test-suites", "lts", "list-reporters", "lr", "count", "c", "help", "h", "?",
      "version",         "v"};
  for (int i = 1; i < argc; ++i) {
    std::string option = argv[i];
    const size_t name_start = option.find_first_not_of('-');
    if (name_start == 0 || name_start == std::string::npos) continue;  // not an option, or only dashes
    option = option.substr(name_start);
    if (option.rfind("dt-", 0) == 0) option = option.substr(3);
    option = option.substr(0, option.find('='));
    for (const char* name : kPrintOnly)
      if (option == name) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (!only_prints(argc, argv) && fp8rl::cuda_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return kSkipped;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
