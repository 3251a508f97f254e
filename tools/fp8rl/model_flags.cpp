#include "model_flags.h"

#include <algorithm>

#include "cli_error.h"

namespace fp8rl_cli {

const std::vector<std::string>& builtin_model_names() {
  static const std::vector<std::string> names{"tiny", "moe-tiny"};
  return names;
}

bool is_builtin_model(const std::string& model) {
  const auto& names = builtin_model_names();
  return model.empty() || std::find(names.begin(), names.end(), model) != names.end();
}

namespace {

// moe-tiny: tiny's attention; 8 experts of width 128, top 2, so a token's
// expert weights (2 x 3 x 128 x 128) equal tiny's MLP (3 x 128 x 256), and
// only the router (8 x 128) and the q/k norms are added per layer.
ModelShape builtin_shape(const std::string& name) {
  ModelShape shape;
  if (name == "moe-tiny") {
    shape.experts = 8;
    shape.experts_per_token = 2;
    shape.moe_intermediate = 128;
  } else if (!name.empty() && name != "tiny") {
    throw UsageError("'" + name + "' is not a built-in model (tiny|moe-tiny)");
  }
  return shape;
}

}  // namespace

void declare_model_flags(ArgParser& p) {
  const ModelShape d;
  const ModelShape moe = builtin_shape("moe-tiny");
  p.option("layers", std::to_string(d.layers), "built-in model: transformer layers");
  p.option("hidden", std::to_string(d.hidden), "built-in model: hidden size");
  p.option("heads", std::to_string(d.heads), "built-in model: attention heads");
  p.option("kv-heads", std::to_string(d.kv_heads), "built-in model: key/value heads");
  p.option("intermediate", std::to_string(d.intermediate), "built-in model: SwiGLU width (of dense layers)");
  p.option("max-positions", std::to_string(d.max_positions), "built-in model: max_position_embeddings");
  // No fallback: the value is the MoE shape's (shown in the help), and giving one with a dense shape is an error.
  p.option("experts", "", "moe-tiny: experts per layer (" + std::to_string(moe.experts) + ")");
  p.option("experts-per-token", "",
           "moe-tiny: experts each token is routed to (" + std::to_string(moe.experts_per_token) + ")");
  p.option("moe-intermediate", "",
           "moe-tiny: SwiGLU width of each expert (" + std::to_string(moe.moe_intermediate) + ")");
}

ModelShape model_shape(const ArgParser& p, const std::string& name) {
  ModelShape s = builtin_shape(name);
  s.layers = p.integer("layers", 1, 256);
  s.hidden = p.integer("hidden", 8, 1 << 16);
  s.heads = p.integer("heads", 1, 1024);
  s.kv_heads = p.integer("kv-heads", 1, 1024);
  s.intermediate = p.integer("intermediate", 1, 1 << 18);
  s.max_positions = p.integer("max-positions", 8, 1 << 20);
  for (const char* moe_flag : {"experts", "experts-per-token", "moe-intermediate"}) {
    if (p.given(moe_flag) && s.experts == 0) throw UsageError(std::string("--") + moe_flag + " needs --model moe-tiny");
  }
  // The library checks the combination (e.g. top-k above the experts) and names the field.
  if (p.given("experts")) s.experts = p.integer("experts", 1, 1 << 16);
  if (p.given("experts-per-token")) s.experts_per_token = p.integer("experts-per-token", 1, 1 << 16);
  if (p.given("moe-intermediate")) s.moe_intermediate = p.integer("moe-intermediate", 1, 1 << 18);
  return s;
}

void declare_threads_flag(ArgParser& p) { p.option("threads", "0", "CPU threads (0 = all)"); }

int threads(const ArgParser& p) { return static_cast<int>(p.integer("threads", 0, 4096)); }

}  // namespace fp8rl_cli
