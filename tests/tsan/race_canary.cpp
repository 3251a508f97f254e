// A deliberate data race, built only under FP8RL_TSAN: its test passes when
// ThreadSanitizer reports it, so a TSan build that lost its instrumentation
// (a dropped flag, an uninstrumented target) fails instead of passing quietly.
#include <thread>

namespace {
int shared_counter = 0;  // written by two threads without synchronization, on purpose
}

int main() {
  std::thread a([] { ++shared_counter; });
  std::thread b([] { ++shared_counter; });
  a.join();
  b.join();
  return shared_counter == 2 ? 0 : 1;
}
