// What the oracle drivers (dump_grads, dump_ppo) share: their command line
//   --model DIR --recipe bf16|fp8|fp8-head --batch BATCH.json --out OUT.safetensors,
// the batch file's text, and the policy they load on the CPU backend with
// FP8RL_THREADS threads (default 2).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/context.h"
#include "core/model/model_params.h"
#include "core/policy/policy.h"

namespace fp8rl::oracle {

struct DumpArgs {
  std::string model, recipe, batch, out;
};

// The arguments, or nothing after printing the usage (exit status 2 then).
inline std::optional<DumpArgs> parse_dump_args(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  if (argc != 9 || !flags.count("--model") || !flags.count("--recipe") || !flags.count("--batch") ||
      !flags.count("--out") || (flags["--recipe"] != "bf16" && flags["--recipe"] != "fp8" && flags["--recipe"] != "fp8-head")) {
    std::fprintf(stderr, "usage: %s --model DIR --recipe bf16|fp8|fp8-head --batch BATCH.json --out OUT.safetensors\n", argv[0]);
    return std::nullopt;
  }
  return DumpArgs{flags["--model"], flags["--recipe"], flags["--batch"], flags["--out"]};
}

inline std::string read_text(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

inline std::unique_ptr<Context> cpu_context_from_env() {
  const char* threads = std::getenv("FP8RL_THREADS");
  BackendRequest request;
  request.choice = BackendChoice::cpu;
  request.num_threads = threads != nullptr ? std::atoi(threads) : 2;
  return std::make_unique<Context>(request, Logger());
}

// The folder's model in the named recipe (fp8: FP8 linear layers; fp8-head: and LM head).
inline std::unique_ptr<policy::Policy> load_policy(Context& context, const DumpArgs& args) {
  policy::Recipe recipe;
  if (args.recipe != "bf16") recipe.linear = policy::Precision::fp8;
  if (args.recipe == "fp8-head") recipe.head = policy::Precision::fp8;
  return std::make_unique<policy::Policy>(context, model::load_hf_model(args.model), recipe);
}

}  // namespace fp8rl::oracle
