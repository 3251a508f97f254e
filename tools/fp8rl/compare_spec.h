// What `fp8rl compare` runs: run specs ("RECIPE[:IMPORTANCE][:stale][:replay]")
// times seeds, each one training run of the same base configuration.
#ifndef FP8RL_TOOLS_COMPARE_SPEC_H
#define FP8RL_TOOLS_COMPARE_SPEC_H

#include <cstdint>
#include <string>
#include <vector>

#include "train_config.h"

namespace fp8rl_cli {

struct RunSpec {
  std::string recipe, importance;
  bool stale_scales = false;
  bool routing_replay = false;
};

// The non-empty items of a comma-separated list.
std::vector<std::string> split_list(const std::string& text);

// Comma-separated specs; IMPORTANCE defaults to `default_importance`; the
// modifiers may come in either order. Throws UsageError naming the bad item.
std::vector<RunSpec> parse_run_specs(const std::string& text, const std::string& default_importance);
// Comma-separated seeds, or ranges "A-B" (inclusive): "0-7" is eight seeds.
std::vector<uint64_t> parse_seeds(const std::string& text);

// The base configuration with the spec and seed applied.
TrainConfig configure_run(const TrainConfig& base, const RunSpec& spec, uint64_t seed);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_COMPARE_SPEC_H
