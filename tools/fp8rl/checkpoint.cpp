#include "checkpoint.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_error.h"
#include "json.h"

namespace fp8rl_cli {

namespace fs = std::filesystem;

RunPaths::RunPaths(const std::string& out_dir)
    : metrics((fs::path(out_dir) / "metrics.jsonl").string()),
      state((fs::path(out_dir) / "checkpoints" / "state.safetensors").string()),
      progress((fs::path(out_dir) / "checkpoints" / "progress.json").string()),
      stale_scales((fs::path(out_dir) / "checkpoints" / "stale_scales.json").string()),
      summary((fs::path(out_dir) / "summary.json").string()),
      model((fs::path(out_dir) / "model").string()),
      attention_scales((fs::path(out_dir) / "model" / "attention_scales.json").string()) {}

void create_run_folders(const std::string& out_dir) {
  std::error_code error;
  fs::create_directories(fs::path(out_dir) / "checkpoints", error);
  if (error) throw LibraryError("cannot create " + out_dir + ": " + error.message());
}

Progress read_progress(const RunPaths& paths) {
  Progress progress;
  std::ifstream in(paths.progress);
  if (!in || !fs::exists(paths.state)) return progress;
  std::stringstream text;
  text << in.rdbuf();
  std::string line = text.str();
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  const auto fields = parse_flat_json(line);
  if (!fields.count("grpo_step")) throw LibraryError(paths.progress + " has no grpo_step");
  progress.grpo_step = std::strtoll(fields.at("grpo_step").c_str(), nullptr, 10);
  if (fields.count("sft_end_val_acc"))
    progress.sft_end_val_acc = std::strtod(fields.at("sft_end_val_acc").c_str(), nullptr);
  return progress;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    if (!out) throw LibraryError("cannot write " + temporary);
  }
  std::error_code error;
  fs::rename(temporary, path, error);  // atomic: readers see the old or the new file
  if (error) throw LibraryError("cannot write " + path + ": " + error.message());
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : "";
}

JsonValue read_json_file(const std::string& path) {
  if (!fs::exists(path)) throw LibraryError("cannot read " + path + ": no such file");
  try {
    return parse_json(read_text_file(path));
  } catch (const JsonSyntaxError& e) {
    throw LibraryError(path + ": " + e.what());
  }
}

void write_progress(const RunPaths& paths, const Progress& progress) {
  JsonObject o;
  o.add("grpo_step", static_cast<long long>(progress.grpo_step)).add("sft_end_val_acc", progress.sft_end_val_acc);
  write_text_file(paths.progress, o.str() + "\n");
}

}  // namespace fp8rl_cli
