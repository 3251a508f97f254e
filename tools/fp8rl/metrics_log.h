// metrics.jsonl: one JSON object per optimizer step, appended and flushed as
// the run goes, so a crashed or resumed run keeps its history.
#ifndef FP8RL_TOOLS_METRICS_LOG_H
#define FP8RL_TOOLS_METRICS_LOG_H

#include <cstdio>
#include <string>
#include <vector>

#include "train_config.h"

namespace fp8rl_cli {

std::string step_record_json(const StepRecord& record);
StepRecord step_record_from_json(const std::string& line);

// Reads the first `count` records of a metrics file (all when count < 0).
std::vector<StepRecord> read_metrics(const std::string& path, long long count);

class MetricsLog {
 public:
  MetricsLog() = default;
  ~MetricsLog();
  // Rewrites `path` with the records to keep (a resumed run drops the lines
  // of steps after its checkpoint, which it is about to redo), then appends.
  void open(const std::string& path, const std::vector<StepRecord>& keep);
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void append(const StepRecord& record);  // no-op without a file

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_METRICS_LOG_H
