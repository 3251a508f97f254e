#include "model_flags.h"

#include <string>

namespace fp8rl_cli {

void declare_model_flags(ArgParser& p) {
  const ModelShape d;
  p.option("layers", std::to_string(d.layers), "built-in model: transformer layers");
  p.option("hidden", std::to_string(d.hidden), "built-in model: hidden size");
  p.option("heads", std::to_string(d.heads), "built-in model: attention heads");
  p.option("kv-heads", std::to_string(d.kv_heads), "built-in model: key/value heads");
  p.option("intermediate", std::to_string(d.intermediate), "built-in model: SwiGLU width");
  p.option("max-positions", std::to_string(d.max_positions), "built-in model: max_position_embeddings");
}

ModelShape model_shape(const ArgParser& p) {
  ModelShape s;
  s.layers = p.integer("layers", 1, 256);
  s.hidden = p.integer("hidden", 8, 1 << 16);
  s.heads = p.integer("heads", 1, 1024);
  s.kv_heads = p.integer("kv-heads", 1, 1024);
  s.intermediate = p.integer("intermediate", 1, 1 << 18);
  s.max_positions = p.integer("max-positions", 8, 1 << 20);
  return s;
}

void declare_threads_flag(ArgParser& p) { p.option("threads", "0", "CPU threads (0 = all)"); }

int threads(const ArgParser& p) { return static_cast<int>(p.integer("threads", 0, 4096)); }

}  // namespace fp8rl_cli
