// A long-lived child process, `/bin/sh -c COMMAND`, that the program talks to
// in lines: a request goes to its stdin, a reply line comes from its stdout,
// and its stderr is kept (the tail) for error messages.
//
// Guarantees, whatever the child does:
// - no call blocks past its deadline: every descriptor on our side is
//   non-blocking and waited on with poll();
// - no SIGPIPE: the child's stdin is one end of a UNIX socket pair, written
//   with send(MSG_NOSIGNAL), so a child that closed its input costs an error
//   code, not our process (a pipe would need the process-wide or per-thread
//   signal state changed, which is not a library's to touch);
// - no leaked descriptors: all are close-on-exec, so neither this child nor
//   any other the program starts inherits them;
// - no zombie and no stray grandchild: the child leads its own process group,
//   which is killed (SIGKILL) as a whole before the child is reaped (a
//   grandchild that leaves the group, with setsid say, is beyond reach).
// One consequence of the own group: a terminal's Ctrl-C reaches only this
// program, whose exit closes the child's stdin; a child that then keeps
// running is on its own.
#ifndef FP8RL_TOOLS_CHILD_PROCESS_H
#define FP8RL_TOOLS_CHILD_PROCESS_H

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace fp8rl_cli {

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the child; throws LibraryError if it cannot be started. (A command
  // that does not exist still starts: the shell then exits with status 127.)
  explicit ChildProcess(const std::string& command);
  // Closes the child's stdin, gives it `kStopGrace` to exit, then kills it; reaps it.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  enum class Outcome {
    line,           // a complete line arrived (returned without its '\n')
    timed_out,      // the deadline passed first
    output_closed,  // the child closed its stdout (usually: it exited)
    input_closed,   // the child closed its stdin before taking the whole request
    too_long,       // more than `max_line` bytes arrived without a newline
  };
  struct Reply {
    Outcome outcome = Outcome::line;
    std::string line;
  };

  // Sends `request` (which should end in '\n') and waits for one line.
  Reply exchange(const std::string& request, Clock::time_point deadline, size_t max_line);

  // The stdout bytes the child wrote beyond the last line taken: output that
  // answers no request ("" when none). Reads what is there, without waiting.
  std::string unrequested_output();

  // Ends the child now (SIGKILL to its group) and reaps it. Returns how it
  // ended: "exited with status 3", "was killed by signal 11 (Segmentation
  // fault)". After a child closed its output, it is given `grace` to exit on
  // its own first, so its real status is reported rather than our SIGKILL.
  std::string stop(Clock::duration grace = Clock::duration::zero());

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // The last bytes the child wrote to stderr (at most kStderrTail), trailing whitespace removed.
  std::string stderr_tail() const;

  static constexpr size_t kStderrTail = 2000;
  static constexpr std::chrono::milliseconds kStopGrace{1000};

 private:
  // One poll() round of at most `timeout`: writes what stdin takes, reads what
  // stdout and stderr have. Returns false when stdin turned out to be closed.
  bool pump(const std::string& request, size_t& sent, Clock::duration timeout);
  void read_stdout();
  bool read_stderr();  // true when it read something
  // Waits up to `grace` for the child to exit without reaping it (WNOWAIT), so
  // its pid, and so its process group id, cannot be reused before the group is killed.
  void wait_for_exit(Clock::duration grace);
  void close_fds();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;   // our end of the socket pair
  int stdout_fd_ = -1;  // read end of a pipe
  int stderr_fd_ = -1;  // read end of a pipe
  bool stdout_eof_ = false;
  std::string stdout_buffer_;
  std::string stderr_tail_;
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_CHILD_PROCESS_H
