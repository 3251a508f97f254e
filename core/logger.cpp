#include "logger.h"

namespace fp8rl {

void Logger::log(LogLevel level, const std::string& message) const noexcept {
  if (!enabled(level)) return;
  try {
    sink_(level, message.c_str());
  } catch (...) {
    // A host callback must not unwind through the library; drop the message.
  }
}

}  // namespace fp8rl
