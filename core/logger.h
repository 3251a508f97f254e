// Routes the library's diagnostics to the host's log callback. The library
// never writes to stdout or stderr itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace fp8rl {

enum class LogLevel : int32_t { debug = 0, info = 1, warning = 2, error = 3, off = 4 };

class Logger {
 public:
  using Sink = std::function<void(LogLevel level, const char* message)>;

  Logger() = default;
  Logger(Sink sink, LogLevel threshold) : sink_(std::move(sink)), threshold_(threshold) {}

  void log(LogLevel level, const std::string& message) const noexcept;
  bool enabled(LogLevel level) const noexcept { return sink_ && level != LogLevel::off && level >= threshold_; }

 private:
  Sink sink_;
  LogLevel threshold_ = LogLevel::warning;
};

}  // namespace fp8rl
