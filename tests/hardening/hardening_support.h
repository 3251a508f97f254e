// Helpers of the hardening tests: files a hostile user would hand the
// library (hand-built safetensors, named pipes), calls that must return
// within a deadline, and a child process whose peak memory is measured.
// Uses only the public header.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <fp8rl/fp8rl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "capi/capi_fixture.h"
#include "io/io_test_support.h"

extern char** environ;

namespace hardening_test {

using fp8rl::test::TempDir;
using fp8rl::test::write_bytes;

// What a call returned, with the thread's message captured right after it.
struct Outcome {
  fp8rl_status status = FP8RL_ERROR_INTERNAL;
  std::string message;
};

inline Outcome outcome_of(fp8rl_status status) { return {status, fp8rl_last_error_message()}; }

// A safetensors file from its JSON header and data area, written here rather
// than by the library so that a forged header can claim anything.
inline std::string safetensors_bytes(const std::string& header, const std::string& data = "") {
  std::string bytes(8, '\0');
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  return bytes + header + data;
}

// A Llama config.json with the given layer count and sizes; the rest plain.
inline std::string llama_config_json(int64_t layers, int64_t hidden = 64, int64_t vocab = 32, int64_t heads = 4,
                                     const std::string& extra = "") {
  return "{\"model_type\": \"llama\", \"vocab_size\": " + std::to_string(vocab) +
         ", \"hidden_size\": " + std::to_string(hidden) + ", \"num_hidden_layers\": " + std::to_string(layers) +
         ", \"num_attention_heads\": " + std::to_string(heads) +
         ", \"intermediate_size\": 128, \"rms_norm_eps\": 1e-5, \"max_position_embeddings\": 64" + extra + "}";
}

// Runs call on a thread and waits up to `seconds`. A call that blocks on the
// named pipe `fifo` past the deadline is released by opening the pipe's
// write end (the blocked reader then sees end of file), so that a hang fails
// the test instead of stalling the suite.
inline Outcome within_deadline(const std::function<fp8rl_status()>& call, const std::string& fifo, int seconds = 20) {
  std::packaged_task<Outcome()> task([&] { return outcome_of(call()); });
  std::future<Outcome> result = task.get_future();
  std::thread runner(std::move(task));
  const bool in_time = result.wait_for(std::chrono::seconds(seconds)) == std::future_status::ready;
  if (!in_time) {
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  runner.join();
  CHECK_MESSAGE(in_time, "the call blocked on " << fifo << " for more than " << seconds << " s");
  return result.get();
}

// A finished child: its exit code (the fp8rl status of its call) and peak RSS.
struct ChildResult {
  int exit_code = -1;
  int signal = 0;
  int64_t peak_rss_kib = 0;
};

// Runs the hardening_child program with arguments and waits for it.
inline ChildResult run_child(const std::vector<std::string>& arguments) {
  std::vector<std::string> argv_storage = {FP8RL_HARDENING_CHILD};
  argv_storage.insert(argv_storage.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& argument : argv_storage) argv.push_back(argument.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
  int status = 0;
  struct rusage usage {};
  REQUIRE(wait4(pid, &status, 0, &usage) == pid);
  ChildResult result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.peak_rss_kib = usage.ru_maxrss;
  return result;
}

}  // namespace hardening_test
