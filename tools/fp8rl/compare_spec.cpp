#include "compare_spec.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "cli_error.h"
#include "model_setup.h"

namespace fp8rl_cli {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

uint64_t parse_seed(const std::string& text, const std::string& item) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || end == text.c_str() || *end != '\0')
    throw UsageError("--seeds: '" + item + "' is not a seed or a range A-B");
  return value;
}

}  // namespace

std::vector<std::string> split_list(const std::string& text) { return split(text, ','); }

std::vector<RunSpec> parse_run_specs(const std::string& text, const std::string& default_importance) {
  static const std::vector<std::string> modes = {"off", "plain", "truncated", "masked", "sequence-masked"};
  std::vector<RunSpec> specs;
  for (const std::string& item : split_list(text)) {
    std::vector<std::string> parts = split(item, ':');
    RunSpec spec;
    while (!parts.empty() && (parts.back() == "replay" || parts.back() == "stale")) {
      bool& modifier = parts.back() == "replay" ? spec.routing_replay : spec.stale_scales;
      if (modifier) throw UsageError("--runs: '" + item + "' repeats :" + parts.back());
      modifier = true;
      parts.pop_back();
    }
    if (parts.empty() || parts.size() > 2)
      throw UsageError("--runs: '" + item + "' is not RECIPE[:IMPORTANCE][:stale][:replay]");
    if (!contains(recipe_names(), parts[0])) throw UsageError("--runs: unknown recipe '" + parts[0] + "'");
    spec.recipe = parts[0];
    spec.importance = parts.size() == 2 ? parts[1] : default_importance;
    if (!contains(modes, spec.importance))
      throw UsageError("--runs: unknown importance mode '" + spec.importance + "'");
    specs.push_back(spec);
  }
  if (specs.empty()) throw UsageError("--runs: give at least one recipe");
  return specs;
}

std::vector<uint64_t> parse_seeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  for (const std::string& item : split_list(text)) {
    const size_t dash = item.find('-', 1);
    const uint64_t first = parse_seed(item.substr(0, dash), item);
    const uint64_t last = dash == std::string::npos ? first : parse_seed(item.substr(dash + 1), item);
    if (last < first || last - first >= 100000) throw UsageError("--seeds: '" + item + "' is not a range A-B, A <= B");
    for (uint64_t seed = first; seed <= last; ++seed) {
      if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end())
        throw UsageError("--seeds: seed " + std::to_string(seed) + " is given twice");
      seeds.push_back(seed);
    }
  }
  if (seeds.empty()) throw UsageError("--seeds: give at least one seed");
  return seeds;
}

TrainConfig configure_run(const TrainConfig& base, const RunSpec& spec, uint64_t seed) {
  TrainConfig config = base;
  config.recipe = spec.recipe;
  config.importance = spec.importance;
  config.stale_scales = spec.stale_scales || base.stale_scales;
  config.routing_replay = spec.routing_replay || base.routing_replay;
  config.seed = seed;
  return config;
}

}  // namespace fp8rl_cli
