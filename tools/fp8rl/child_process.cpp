#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "cli_error.h"

extern char** environ;

namespace fp8rl_cli {

namespace {

[[noreturn]] void system_error(const std::string& what) { throw LibraryError(what + ": " + std::strerror(errno)); }

// Descriptors 0-2 must not hold our ends: if the program runs with one of
// them closed, a new descriptor could land there and dup2 onto itself, which
// would leave it close-on-exec in the child.
int above_stdio(int fd) {
  if (fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int saved = errno;
  close(fd);
  errno = saved;
  return moved;
}

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) system_error("fcntl");
}

// Our ends and the child's ends of stdin, stdout and stderr.
struct Channels {
  int ours[3] = {-1, -1, -1};
  int theirs[3] = {-1, -1, -1};

  void create() {
    int in[2], out[2], err[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) system_error("socketpair");
    ours[0] = in[0], theirs[0] = in[1];
    if (pipe2(out, O_CLOEXEC) != 0) system_error("pipe2");
    ours[1] = out[0], theirs[1] = out[1];
    if (pipe2(err, O_CLOEXEC) != 0) system_error("pipe2");
    ours[2] = err[0], theirs[2] = err[1];
    for (int i = 0; i < 3; ++i) {
      ours[i] = above_stdio(ours[i]);
      theirs[i] = above_stdio(theirs[i]);
      if (ours[i] < 0 || theirs[i] < 0) system_error("fcntl");
      // Only our ends: O_NONBLOCK on a pipe's shared end would break ordinary children.
      set_nonblocking(ours[i]);
    }
  }
  void close_theirs() {
    for (int& fd : theirs) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  }
  void close_all() {
    close_theirs();
    for (int& fd : ours) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  }
};

// The child starts with default signal dispositions and an empty mask, so
// whatever this program ignores or blocks (SIGPIPE, say) does not leak into it,
// and in a process group of its own, so it can be killed with its children.
pid_t spawn_shell(const std::string& command, const Channels& channels) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int i = 0; i < 3; ++i) posix_spawn_file_actions_adddup2(&actions, channels.theirs[i], i);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&attr, &signals);
  for (int s : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2}) sigaddset(&signals, s);
  posix_spawnattr_setsigdefault(&attr, &signals);
  std::string sh = "sh", dash_c = "-c", text = command;
  char* argv[] = {sh.data(), dash_c.data(), text.data(), nullptr};
  pid_t pid = -1;
  const int error = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    errno = error;
    return -1;
  }
  return pid;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return "was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

}  // namespace

ChildProcess::ChildProcess(const std::string& command) {
  Channels channels;
  try {
    channels.create();
  } catch (...) {
    channels.close_all();
    throw;
  }
  pid_ = spawn_shell(command, channels);
  const int spawn_errno = errno;
  channels.close_theirs();
  if (pid_ < 0) {
    channels.close_all();
    errno = spawn_errno;
    system_error("cannot start `" + command + "`");
  }
  stdin_fd_ = channels.ours[0];
  stdout_fd_ = channels.ours[1];
  stderr_fd_ = channels.ours[2];
}

ChildProcess::~ChildProcess() {
  try {
    stop(kStopGrace);
  } catch (...) {
    // A destructor cannot report; stop() has killed and reaped the child before anything can throw.
  }
}

ChildProcess::Reply ChildProcess::exchange(const std::string& request, Clock::time_point deadline, size_t max_line) {
  size_t sent = 0;
  for (;;) {
    const size_t newline = stdout_buffer_.find('\n');
    if (newline != std::string::npos) {
      Reply reply{Outcome::line, stdout_buffer_.substr(0, newline)};
      stdout_buffer_.erase(0, newline + 1);
      return reply;
    }
    if (stdout_buffer_.size() > max_line) return {Outcome::too_long, stdout_buffer_};
    if (stdout_eof_ || !running()) return {Outcome::output_closed, stdout_buffer_};
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return {Outcome::timed_out, stdout_buffer_};
    if (!pump(request, sent, left)) return {Outcome::input_closed, stdout_buffer_};
  }
}

std::string ChildProcess::unrequested_output() {
  size_t sent = 0;
  if (running()) pump("", sent, Clock::duration::zero());
  return stdout_buffer_;
}

bool ChildProcess::pump(const std::string& request, size_t& sent, Clock::duration timeout) {
  pollfd fds[3];
  nfds_t count = 0;
  int in = -1, out = -1, err = -1;
  if (sent < request.size()) in = static_cast<int>(count), fds[count++] = {stdin_fd_, POLLOUT, 0};
  if (!stdout_eof_) out = static_cast<int>(count), fds[count++] = {stdout_fd_, POLLIN, 0};
  if (stderr_fd_ >= 0) err = static_cast<int>(count), fds[count++] = {stderr_fd_, POLLIN, 0};
  // Rounded up, so a wait shorter than 1 ms does not spin.
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
  const int ready = poll(fds, count, static_cast<int>(std::min<long long>(ms, INT_MAX)));
  if (ready < 0) {
    if (errno == EINTR) return true;
    system_error("poll");
  }
  if (in >= 0 && fds[in].revents != 0) {
    const ssize_t n = send(stdin_fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) sent += static_cast<size_t>(n);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
  }
  if (out >= 0 && fds[out].revents != 0) read_stdout();
  if (err >= 0 && fds[err].revents != 0) read_stderr();
  return true;
}

// One read per poll round: a child flooding its stdout cannot keep us here,
// and exchange() checks the line limit between rounds.
void ChildProcess::read_stdout() {
  char buffer[65536];
  const ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
  if (n > 0) stdout_buffer_.append(buffer, static_cast<size_t>(n));
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) stdout_eof_ = true;
}

bool ChildProcess::read_stderr() {
  char buffer[65536];
  const ssize_t n = read(stderr_fd_, buffer, sizeof buffer);
  if (n > 0) {
    stderr_tail_.append(buffer, static_cast<size_t>(n));
    if (stderr_tail_.size() > 2 * kStderrTail) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTail);
    return true;
  }
  if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    close(stderr_fd_);
    stderr_fd_ = -1;
  }
  return false;
}

std::string ChildProcess::stderr_tail() const {
  std::string tail =
      stderr_tail_.size() > kStderrTail ? stderr_tail_.substr(stderr_tail_.size() - kStderrTail) : stderr_tail_;
  const size_t end = tail.find_last_not_of(" \t\r\n");
  return end == std::string::npos ? "" : tail.substr(0, end + 1);
}

void ChildProcess::wait_for_exit(Clock::duration grace) {
  const auto deadline = Clock::now() + grace;
  for (;;) {
    siginfo_t info{};
    const int r = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r != 0 && errno == EINTR) continue;
    if (r != 0 || info.si_pid != 0) return;  // exited (or not ours to wait for)
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return;
    // Meanwhile keep its stderr flowing (it may be writing its last words).
    size_t sent = 0;
    // (With nothing left to poll, poll() still sleeps: no busy wait.)
    pump("", sent, std::min<Clock::duration>(left, std::chrono::milliseconds(5)));
  }
}

std::string ChildProcess::stop(Clock::duration grace) {
  if (!running()) return "had already stopped";
  close(stdin_fd_);  // end of input: a well-behaved child exits now
  stdin_fd_ = -1;
  wait_for_exit(grace);
  // The group first, while the unreaped child still holds its id.
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  int status = 0;
  pid_t reaped;
  do {
    reaped = waitpid(pid_, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  pid_ = -1;
  // What is left in the pipe; a grandchild that escaped the group may keep
  // stderr open, so read only what is there without waiting.
  while (stderr_fd_ >= 0 && read_stderr()) {
  }
  close_fds();
  return reaped < 0 ? "ended (its status is unknown: it was reaped elsewhere)" : describe_status(status);
}

void ChildProcess::close_fds() {
  for (int* fd : {&stdin_fd_, &stdout_fd_, &stderr_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

}  // namespace fp8rl_cli
