// cmd:PROGRAM: rewards from an external process, for checks that need more
// than a pattern (unit tests of generated code, a math verifier, a judge).
//
// Protocol, one JSON line each way per completion:
//   to its stdin:    {"prompt": "...", "completion": "...", "answer": "..."}
//   from its stdout: {"reward": 0.5}          (other members are ignored)
// The program is started once, with /bin/sh -c PROGRAM, and serves every
// request of the run; its stderr is kept for messages. Anything else it does
// (exiting, crashing, hanging past the timeout, closing stdout, printing a
// line that is not such a reply, printing unrequested output) stops the run
// with an error naming the row, and the program is killed and reaped.
#include <cmath>
#include <cstdio>
#include <memory>

#include "child_process.h"
#include "cli_error.h"
#include "json_value.h"
#include "reward_kinds.h"

namespace fp8rl_cli {

namespace {

// A reply is one short line; anything longer is a program printing something else.
constexpr size_t kMaxReplyBytes = size_t{1} << 20;

// `text` cut to a length that fits in an error message.
std::string excerpt(const std::string& text) {
  constexpr size_t kMax = 200;
  if (text.size() <= kMax) return text;
  return text.substr(0, kMax) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string seconds(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g s", value);
  return buffer;
}

class CommandReward : public Reward {
 public:
  CommandReward(const std::string& program, double timeout_seconds)
      : program_(program), timeout_seconds_(timeout_seconds), child_(std::make_unique<ChildProcess>(program)) {}

  double score(const std::string& prompt, const std::string& completion, const std::string& answer,
               int64_t row) override {
    if (!child_) throw LibraryError(prefix(row) + "the program is not running: it failed at " + failed_at_);
    const std::string unrequested = child_->unrequested_output();
    if (!unrequested.empty()) {
      fail(row, "the program printed output that answers no request: `" + excerpt(unrequested) + "`", kKilled);
    }
    const auto deadline = ChildProcess::Clock::now() + std::chrono::duration_cast<ChildProcess::Clock::duration>(
                                                           std::chrono::duration<double>(timeout_seconds_));
    const auto reply = child_->exchange(request(prompt, completion, answer), deadline, kMaxReplyBytes);
    switch (reply.outcome) {
      case ChildProcess::Outcome::line: return parse_reply(reply.line, row);
      case ChildProcess::Outcome::timed_out:
        fail(row, "no reply within " + seconds(timeout_seconds_) + "; the program was killed", kKilled);
      case ChildProcess::Outcome::output_closed:
        fail(row, "the program closed its stdout without a reply" + partial(reply.line), kEnded);
      case ChildProcess::Outcome::input_closed:
        fail(row, "the program closed its stdin before taking the request", kEnded);
      case ChildProcess::Outcome::too_long:
        fail(row,
             "the reply exceeds " + std::to_string(kMaxReplyBytes) + " bytes without a newline" + partial(reply.line) +
                 "; the program was killed",
             kKilled);
    }
    fail(row, "unexpected reply outcome", kKilled);
  }

 private:
  // Whether the error reports how the program ended: not when we killed it.
  enum Ending { kKilled, kEnded };

  static std::string request(const std::string& prompt, const std::string& completion, const std::string& answer) {
    return "{\"prompt\": " + json_string_utf8(prompt) + ", \"completion\": " + json_string_utf8(completion) +
           ", \"answer\": " + json_string_utf8(answer) + "}\n";
  }

  static std::string partial(const std::string& text) {
    return text.empty() ? "" : " (it had written `" + excerpt(text) + "`)";
  }

  double parse_reply(std::string line, int64_t row) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string quoted = ": `" + excerpt(line) + "`";
    JsonValue reply = JsonValue::make_null();
    try {
      reply = parse_json(line);
    } catch (const JsonSyntaxError& error) {
      fail(row, "the reply is not JSON (" + std::string(error.what()) + ")" + quoted, kKilled);
    }
    const JsonValue* reward = reply.is_object() ? reply.find("reward") : nullptr;
    if (!reward || !reward->is_number()) fail(row, "the reply has no numeric \"reward\"" + quoted, kKilled);
    if (!std::isfinite(reward->number())) fail(row, "the reward is not finite" + quoted, kKilled);
    return reward->number();
  }

  std::string prefix(int64_t row) const {
    return "reward program `" + program_ + "`, row " + std::to_string(row) + ": ";
  }

  // Stops and reaps the program, then throws. After it closed its output the
  // program gets a moment to exit, so the message gives its own status.
  [[noreturn]] void fail(int64_t row, const std::string& what, Ending ending) {
    const std::string how =
        child_->stop(ending == kEnded ? std::chrono::milliseconds(500) : std::chrono::milliseconds(0));
    std::string message = prefix(row) + what;
    if (ending == kEnded) message += "; it " + how;
    const std::string tail = child_->stderr_tail();
    if (!tail.empty()) message += "; its stderr ends with:\n" + tail;
    child_.reset();
    failed_at_ = "row " + std::to_string(row);
    throw LibraryError(message);
  }

  std::string program_;
  double timeout_seconds_;
  std::unique_ptr<ChildProcess> child_;  // null once it failed
  std::string failed_at_;
};

}  // namespace

std::unique_ptr<Reward> make_command_reward(const std::string& program, double timeout_seconds) {
  return std::make_unique<CommandReward>(program, timeout_seconds);
}

}  // namespace fp8rl_cli
