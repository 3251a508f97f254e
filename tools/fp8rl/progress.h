// The live progress display of a training run on stderr: one line rewritten
// in place on a terminal, plain periodic lines otherwise (logs, CI, pipes).
#ifndef FP8RL_TOOLS_PROGRESS_H
#define FP8RL_TOOLS_PROGRESS_H

#include <cmath>
#include <cstdio>
#include <string>

#include "train_config.h"

namespace fp8rl_cli {

class ProgressBar : public ProgressSink {
 public:
  // quiet: only messages, no step lines.
  explicit ProgressBar(std::FILE* stream, bool quiet = false);
  ~ProgressBar() override;
  void on_phase(const std::string& phase, int64_t total_steps) override;
  void on_step(const StepRecord& record, int64_t total_steps) override;
  void on_message(const std::string& text) override;

 private:
  void end_line();
  std::string format(const StepRecord& record, int64_t total_steps) const;

  std::FILE* stream_;
  bool tty_;
  bool quiet_;
  bool line_open_ = false;
  double last_val_ = NAN;
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_PROGRESS_H
