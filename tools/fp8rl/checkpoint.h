// Where a run keeps its files under --out, and the small progress record that
// tells --resume which GRPO step the saved trainer state belongs to.
#ifndef FP8RL_TOOLS_CHECKPOINT_H
#define FP8RL_TOOLS_CHECKPOINT_H

#include <cstdint>
#include <string>

#include "json_value.h"

namespace fp8rl_cli {

struct RunPaths {
  explicit RunPaths(const std::string& out_dir);
  std::string metrics;           // out/metrics.jsonl
  std::string state;             // out/checkpoints/state.safetensors
  std::string progress;          // out/checkpoints/progress.json
  std::string stale_scales;      // out/checkpoints/stale_scales.json (--stale-scales)
  std::string summary;           // out/summary.json
  std::string model;             // out/model: the final policy as an HF folder (F32)
  std::string attention_scales;  // out/model/attention_scales.json: its attention scales
};

// Written after the trainer state; the state is only trusted with its record.
struct Progress {
  int64_t grpo_step = -1;  // -1: no checkpoint
  double sft_end_val_acc = 0;
};

void create_run_folders(const std::string& out_dir);
Progress read_progress(const RunPaths& paths);                         // grpo_step -1 when absent
void write_progress(const RunPaths& paths, const Progress& progress);  // atomic (rename)
void write_text_file(const std::string& path, const std::string& text);
// The whole file, or "" when it cannot be read.
std::string read_text_file(const std::string& path);
// One JSON document; throws LibraryError naming the file when it is missing or malformed.
JsonValue read_json_file(const std::string& path);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_CHECKPOINT_H
