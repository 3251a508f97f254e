// Error paths from several threads at once. fp8rl_last_error_message() is
// per thread ("concurrent callers do not see each other's"): each thread
// makes its own kind of bad call, interleaved with good calls on the shared
// context and policy, and must read back its own message every time, never a
// neighbour's; a thread that never fails must keep reading "".
#include <functional>

#include "tsan/concurrency_support.h"

namespace tsan_test {
namespace {

constexpr int kRounds = 20;

struct BadCall {
  std::function<fp8rl_status()> call;
  fp8rl_status expected;
  std::string prefix;  // the message: "<function>: <why>"
  std::string needle;
};

}  // namespace

TEST_CASE("concurrent bad calls: each thread reads back its own status and message") {
  Failures setup;
  fp8rl_context* context = create_context(setup);
  REQUIRE(context != nullptr);
  fp8rl_policy* policy = create_policy(context, 3, setup);
  REQUIRE(policy != nullptr);
  const Sequences sequences = generate(policy, Prompts(0), setup);
  REQUIRE(setup.empty());
  const TempFolder missing("missing");
  const std::string absent = missing.path("does_not_exist");

  fp8rl_context_options bad_threads;
  fp8rl_context_options_init(&bad_threads);
  bad_threads.num_threads = -1;
  const fp8rl_sampling_options options = sampling();
  std::vector<float> small(1);
  const std::vector<BadCall> bad_calls = {
      {[&] {
         fp8rl_context* c = nullptr;
         return fp8rl_context_create(&bad_threads, &c);
       },
       FP8RL_ERROR_INVALID_ARGUMENT, "fp8rl_context_create", "num_threads"},
      {[&] { return fp8rl_context_get_description(context, nullptr); }, FP8RL_ERROR_INVALID_ARGUMENT,
       "fp8rl_context_get_description", "out_description"},
      {[&] { return fp8rl_policy_save(policy, nullptr, FP8RL_DTYPE_F32); }, FP8RL_ERROR_INVALID_ARGUMENT,
       "fp8rl_policy_save", "folder"},
      {[&] {
         fp8rl_policy* p = nullptr;
         return fp8rl_policy_load(context, absent.c_str(), &p);
       },
       FP8RL_ERROR_IO, "fp8rl_policy_load", "does_not_exist"},
      {[&] {
         return fp8rl_policy_score(policy, sequences.tokens.data(), sequences.offsets.data(), 3,
                                   sequences.prompt_lengths.data(), &options, small.data(), 1);
       },
       FP8RL_ERROR_INVALID_ARGUMENT, "fp8rl_policy_score", "capacity"},
  };
  REQUIRE(sequences.logprobs.size() > 1);  // so the last bad call is one

  const int threads = static_cast<int>(bad_calls.size()) + 1;
  run_concurrently(threads, [&](int i, Failures& failures) {
    for (int round = 0; round < kRounds; ++round) {
      if (i < static_cast<int>(bad_calls.size())) {
        const BadCall& bad = bad_calls[static_cast<size_t>(i)];
        const fp8rl_status status = bad.call();
        if (status != bad.expected)
          failures.push_back(bad.prefix + " returned " + fp8rl_status_name(status) + ": " + fp8rl_last_error_message());
      }
      // A good call in between: it must leave this thread's message alone.
      if (!same_bits(score(policy, sequences, failures), sequences.logprobs))
        failures.push_back("a good score call gave other log-probs");
      const std::string message = fp8rl_last_error_message();
      if (i == static_cast<int>(bad_calls.size())) {
        if (!message.empty()) failures.push_back("a thread with no failed call reads '" + message + "'");
        continue;
      }
      const BadCall& bad = bad_calls[static_cast<size_t>(i)];
      if (message.rfind(bad.prefix + ": ", 0) != 0 || message.find(bad.needle) == std::string::npos)
        failures.push_back("expected '" + bad.prefix + ": ...'" + bad.needle + "...', read '" + message + "'");
    }
  });

  CHECK(fp8rl_policy_destroy(policy) == FP8RL_OK);
  CHECK(fp8rl_context_destroy(context) == FP8RL_OK);
}

}  // namespace tsan_test
