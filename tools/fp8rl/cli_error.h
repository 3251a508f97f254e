// The two ways the program fails: a bad command line (exit 2, with usage)
// and a failed library call (exit 1, with the library's message).
#ifndef FP8RL_TOOLS_CLI_ERROR_H
#define FP8RL_TOOLS_CLI_ERROR_H

#include <fp8rl/fp8rl.h>

#include <stdexcept>
#include <string>

namespace fp8rl_cli {

// A command-line mistake; main() prints it with the subcommand's usage and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failed fp8rl call or file operation; main() prints it and exits 1.
class LibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every C API status goes through here, so no failure is silently dropped.
inline void check(fp8rl_status status, const char* what) {
  if (status != FP8RL_OK) {
    throw LibraryError(std::string(what) + " failed (" + fp8rl_status_name(status) +
                       "): " + fp8rl_last_error_message());
  }
}

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_CLI_ERROR_H
