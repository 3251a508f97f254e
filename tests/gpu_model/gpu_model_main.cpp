// Driver of the whole-policy GPU suite: like tests/gpu/gpu_test_main.cpp, but
// it asks the C API, the only thing this suite links, whether a CUDA context
// can be made; without one (no device, or a build without CUDA) the suite
// reports itself skipped (exit 77, SKIP_RETURN_CODE).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>

#include <cstdio>

namespace {

constexpr int kSkipped = 77;

bool cuda_context_available() {
  fp8rl_context_options options;
  if (fp8rl_context_options_init(&options) != FP8RL_OK) return false;
  options.backend = FP8RL_BACKEND_CUDA;
  fp8rl_context* context = nullptr;
  if (fp8rl_context_create(&options, &context) != FP8RL_OK) {
    std::printf("SKIPPED: no CUDA context: %s\n", fp8rl_last_error_message());
    return false;
  }
  (void)fp8rl_context_destroy(context);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  // Listing the tests (ctest discovers them at build time) needs no device.
  if (!context.shouldExit() && !cuda_context_available()) return kSkipped;
  return context.run();
}
