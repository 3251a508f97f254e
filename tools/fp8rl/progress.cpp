#include "progress.h"

#include <unistd.h>

#include <algorithm>

namespace fp8rl_cli {

ProgressBar::ProgressBar(std::FILE* stream, bool quiet)
    : stream_(stream), tty_(isatty(fileno(stream)) != 0), quiet_(quiet) {}

ProgressBar::~ProgressBar() { end_line(); }

void ProgressBar::end_line() {
  if (line_open_) std::fputc('\n', stream_);
  line_open_ = false;
}

void ProgressBar::on_phase(const std::string& phase, int64_t total_steps) {
  end_line();
  if (quiet_) return;
  std::fprintf(stream_, "%s: %lld steps\n", phase == "sft" ? "SFT warm-start" : "GRPO",
               static_cast<long long>(total_steps));
}

void ProgressBar::on_message(const std::string& text) {
  end_line();
  std::fprintf(stream_, "%s\n", text.c_str());
}

std::string ProgressBar::format(const StepRecord& r, int64_t total) const {
  const int width = 20;
  const int filled = total > 0 ? static_cast<int>(width * r.step / total) : width;
  std::string bar =
      "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '.') + "]";
  char val[16] = "  -  ";
  if (!std::isnan(last_val_)) std::snprintf(val, sizeof val, "%5.1f%%", 100.0 * last_val_);
  char line[256];
  std::snprintf(line, sizeof line,
                "%-4s %s %4lld/%-4lld loss %7.4f reward %.3f val %s mult_err %.4f gen_kl %.2e tok/s %6.0f %.2fs/step",
                r.phase.c_str(), bar.c_str(), static_cast<long long>(r.step), static_cast<long long>(total), r.loss,
                r.reward_mean, val, r.token_mult_prob_error, r.gen_kl_error, r.tokens_per_second, r.step_seconds);
  std::string text = line;
  const int64_t moved = r.bytes_reduced + r.bytes_gathered;
  if (moved > 0) {  // data parallelism: what this rank moved in collectives
    char traffic[64];
    std::snprintf(traffic, sizeof traffic, " comm %.2f MB", static_cast<double>(moved) / 1e6);
    text += traffic;
  }
  return text;
}

void ProgressBar::on_step(const StepRecord& record, int64_t total_steps) {
  if (record.has_val()) last_val_ = record.val_acc;
  if (quiet_) return;
  const std::string line = format(record, total_steps);
  if (tty_) {
    std::fprintf(stream_, "\r%s\x1b[K", line.c_str());  // rewrite in place, clear the tail
    line_open_ = true;
    if (record.step == total_steps) end_line();
  } else {
    // About 20 lines a phase, plus every evaluation and the last step.
    const int64_t every = std::max<int64_t>(1, total_steps / 20);
    if (record.step % every == 0 || record.has_val() || record.step == total_steps) {
      std::fprintf(stream_, "%s\n", line.c_str());
    }
  }
  std::fflush(stream_);
}

}  // namespace fp8rl_cli
