// The cmd: reward against a real external program (reward_programs/
// reward_program.py) that behaves, then misbehaves in each way the reward
// must survive. Every case checks the error a user would read, that the call
// returned in bounded time, and that no child process or descriptor is left.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/fp8rl/child_process.h"
#include "tools/fp8rl/cli_error.h"
#include "tools/fp8rl/text_reward.h"

using fp8rl_cli::LibraryError;
using fp8rl_cli::make_reward;
using fp8rl_cli::RewardOptions;
using Clock = std::chrono::steady_clock;

namespace {

std::string program(const std::string& mode) {
  const char* python = std::getenv("FP8RL_PYTHON");
  return std::string("'") + (python ? python : "python3") + "' '" FP8RL_REWARD_PROGRAMS "/reward_program.py' " + mode;
}

// /proc/PID/stat fields after the command name, which may hold spaces and parentheses.
std::vector<std::string> stat_fields(const std::filesystem::path& dir) {
  std::ifstream file(dir / "stat");
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  std::istringstream rest(close == std::string::npos ? "" : text.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;  // [0] state, [1] ppid
}

// Our children, zombies included: a zombie is a child nobody reaped.
std::vector<pid_t> child_processes() {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto fields = stat_fields(entry.path());
    if (fields.size() > 1 && std::stol(fields[1]) == getpid()) children.push_back(std::stoi(name));
  }
  return children;
}

// Live processes (not zombies) whose command line holds `token`, wherever they were reparented.
int live_processes_with(const std::string& token) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream file(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (cmdline.find(token) == std::string::npos) continue;
    const auto fields = stat_fields(entry.path());
    if (!fields.empty() && fields[0] != "Z") ++count;
  }
  return count;
}

size_t open_descriptors() {
  return static_cast<size_t>(
      std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator()));
}

struct Failure {
  std::string message;
  int64_t row = -1;
  double seconds = 0;  // of the failing call
};

// Scores rows 0, 1, ... with `command` until one fails (at most 5 rows).
Failure run_command_until_failure(const std::string& command, double timeout_seconds = 5) {
  RewardOptions options;
  options.timeout_seconds = timeout_seconds;
  auto reward = make_reward("cmd:" + command, options);
  for (int64_t row = 0; row < 5; ++row) {
    const auto start = Clock::now();
    try {
      const double value = reward->score("p", "42", "42", row);  // outside CHECK, which would catch the error
      CHECK(value == 1.0);
    } catch (const LibraryError& error) {
      return {error.what(), row, std::chrono::duration<double>(Clock::now() - start).count()};
    }
  }
  return {"(no failure)", -1, 0};
}

Failure run_until_failure(const std::string& mode, double timeout_seconds = 5) {
  return run_command_until_failure(program(mode), timeout_seconds);
}

// The failure must leave nothing behind, whatever the test checks besides.
struct NothingLeftBehind {
  size_t descriptors = open_descriptors();
  ~NothingLeftBehind() {
    CHECK(child_processes().empty());
    CHECK(open_descriptors() == descriptors);
  }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("reward cmd: a well-behaved program serves many requests from one process") {
  NothingLeftBehind check;
  {
    auto reward = make_reward("cmd:" + program("equal"));
    for (int64_t row = 0; row < 20; ++row) CHECK(reward->score("p", " 42\n", "42", row) == 1.0);
    CHECK(reward->score("p", "41", "42", 20) == 0.0);
    CHECK(child_processes().size() == 1);  // started once, still running
  }
}

TEST_CASE("reward cmd: text reaches the program intact, broken UTF-8 repaired") {
  NothingLeftBehind check;
  auto reward = make_reward("cmd:" + program("length"));
  CHECK(reward->score("p", "h\xC3\xA9llo \xF0\x9F\x98\x80", "", 0) == 7);  // code points, as Python counts them
  CHECK(reward->score("p", "a\nb\"c\\", "", 1) == 6);                      // escapes keep it one line
  CHECK(reward->score("p", "ab\xF0\x9F", "", 2) == 4);                     // a cut character: two U+FFFD
  CHECK(reward->score("p", std::string(300000, 'x'), "", 3) == 300000);    // larger than a pipe's buffer
}

TEST_CASE("reward cmd: a program that exits mid-run") {
  NothingLeftBehind check;
  const Failure failure = run_until_failure("crash");
  INFO(failure.message);
  CHECK(failure.row == 2);
  CHECK(contains(failure.message, "reward program `"));
  CHECK(contains(failure.message, "`, row 2: the program closed its stdout without a reply; it exited with status 3"));
  CHECK(contains(failure.message, "; its stderr ends with:\nreward_program: crashing on purpose"));
}

TEST_CASE("reward cmd: a program that crashes on a signal") {
  NothingLeftBehind check;
  const Failure failure = run_until_failure("segfault");
  INFO(failure.message);
  CHECK(failure.row == 1);
  CHECK(contains(failure.message, "row 1: the program closed its stdout without a reply; it "));
  // Python's own status, or 128 + 11 from a shell or wrapper (such as a pyenv shim) that ran it as a child.
  CHECK((contains(failure.message, "it was killed by signal 11 (Segmentation fault)") ||
         contains(failure.message, "it exited with status 139")));
}

TEST_CASE("reward cmd: a program that hangs is killed at the timeout") {
  NothingLeftBehind check;
  const Failure failure = run_until_failure("hang", 0.5);
  INFO(failure.message);
  CHECK(failure.row == 0);
  CHECK(contains(failure.message, "row 0: no reply within 0.5 s; the program was killed"));
  CHECK(failure.seconds >= 0.5);
  CHECK(failure.seconds < 2.0);
}

TEST_CASE("reward cmd: replies that are not a reward") {
  NothingLeftBehind check;
  CHECK(contains(run_until_failure("garbage").message,
                 "row 0: the reply is not JSON (unexpected character 't' at column 1): `this is not json`"));
  CHECK(
      contains(run_until_failure("no_reward").message, "row 0: the reply has no numeric \"reward\": `{\"score\": 1}`"));
  CHECK(
      contains(run_until_failure("text_reward").message, "the reply has no numeric \"reward\": `{\"reward\": \"1\"}`"));
  CHECK(contains(run_until_failure("infinite").message, "row 0: the reward is not finite: `{\"reward\": 1e999}`"));
}

TEST_CASE("reward cmd: a program that closes stdout but keeps running") {
  NothingLeftBehind check;
  // In shell: a Python program behind a wrapper (a pyenv shim) would not be
  // the only holder of the pipe, and closing it would look like a hang.
  const Failure failure = run_command_until_failure("read request; exec 1>&-; exec sleep 30");
  INFO(failure.message);
  CHECK(contains(failure.message, "row 0: the program closed its stdout without a reply; it was killed by signal 9"));
  CHECK(failure.seconds < 2.0);
}

TEST_CASE("reward cmd: a program that closes its stdin costs an error, not a SIGPIPE") {
  NothingLeftBehind check;
  auto reward = make_reward("cmd:exec 0<&-; exec sleep 30");
  // Larger than the socket's buffer, so the write must meet the closed end.
  const auto start = Clock::now();
  CHECK_THROWS_WITH_AS(
      reward->score("p", std::string(8 << 20, 'x'), "", 4),
      doctest::Contains("row 4: the program closed its stdin before taking the request; it was killed by signal 9"),
      LibraryError);
  CHECK(std::chrono::duration<double>(Clock::now() - start).count() < 2.0);
}

TEST_CASE("reward cmd: a program that writes a huge line") {
  NothingLeftBehind check;
  const Failure failure = run_until_failure("huge_line");
  INFO(failure.message);
  CHECK(contains(failure.message, "row 0: the reply exceeds 1048576 bytes without a newline (it had written `xxx"));
  CHECK(contains(failure.message, "; the program was killed"));
  CHECK(contains(failure.message, "... ("));  // the excerpt is cut, not 1 MiB of x
  CHECK(failure.message.size() < 2000);
}

TEST_CASE("reward cmd: a program that answers twice") {
  NothingLeftBehind check;
  auto reward = make_reward("cmd:" + program("two_lines"));
  CHECK(reward->score("p", "42", "42", 0) == 1.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the second line arrive
  CHECK_THROWS_WITH_AS(
      reward->score("p", "42", "42", 1),
      doctest::Contains("row 1: the program printed output that answers no request: `{\"reward\": 1.0}"), LibraryError);
  // The failure is final: later rows say so instead of restarting quietly.
  CHECK_THROWS_WITH_AS(reward->score("p", "42", "42", 2),
                       doctest::Contains("row 2: the program is not running: it failed at row 1"), LibraryError);
}

TEST_CASE("reward cmd: a program that exits before reading, or does not exist") {
  NothingLeftBehind check;
  const Failure silent = run_until_failure("silent_exit");
  INFO(silent.message);
  CHECK(silent.row == 0);
  CHECK(contains(silent.message, "it exited with status 0"));
  const Failure missing = run_command_until_failure("/no/such/reward-program");
  INFO(missing.message);
  CHECK(contains(missing.message, "it exited with status 127"));
  CHECK(contains(missing.message, "/no/such/reward-program"));  // the shell's complaint, from stderr
}

TEST_CASE("reward cmd: the program's own children die with it") {
  NothingLeftBehind check;
  const std::string token = "fp8rl-grandchild-" + std::to_string(getpid());
  const Failure failure = run_until_failure("grandchild " + token, 0.5);
  INFO(failure.message);
  CHECK(contains(failure.message, "no reply within 0.5 s"));
  // Killed at once; the reparented zombie may take a moment to be reaped by init, which the count ignores.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (live_processes_with(token) > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(live_processes_with(token) == 0);
}

TEST_CASE("child_process: a child that ignores end of input is killed after the grace period") {
  NothingLeftBehind check;
  const auto start = Clock::now();
  {
    fp8rl_cli::ChildProcess child("exec sleep 30");
    CHECK(child.running());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  CHECK(seconds < fp8rl_cli::ChildProcess::kStopGrace.count() / 1000.0 + 1.0);
}
