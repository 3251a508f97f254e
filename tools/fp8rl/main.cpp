// fp8rl: the command-line program. Dispatches to a subcommand and turns its
// failures into exit statuses: 2 for a bad command line, 1 for a failed call.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli_error.h"
#include "commands.h"
#include "world.h"

namespace fp8rl_cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list{
      {"train", "SFT warm-start then GRPO on a built-in task or a text dataset (--data)", declare_train, run_train},
      {"compare", "the same run under several recipes and seeds: table and PNG plot", declare_compare, run_compare},
      {"generate", "sample completions from a model or the built-in policy", declare_generate, run_generate},
      {"eval", "accuracy of an HF model folder on a JSONL text dataset", declare_eval, run_eval},
      {"export-fp8", "write an HF model folder as an FP8 block-quantized HF folder", declare_export_fp8,
       run_export_fp8},
      {"info", "model config, recipe, parameters, memory, build features", declare_info, run_info},
  };
  return list;
}

namespace {

void print_overview(std::FILE* out) {
  std::fprintf(out, "usage: fp8rl <command> [options]   (fp8rl <command> --help for its options)\n\ncommands:\n");
  for (const Command& c : commands()) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
}

int run_command(const Command& command, const std::vector<std::string>& args) {
  ArgParser parser(command.name, command.summary);
  command.declare(parser);
  parser.flag("help", "show this help");
  try {
    parser.parse(args);
    if (parser.is_set("help")) {
      std::fputs(parser.usage().c_str(), stdout);
      return 0;
    }
    return command.run(parser);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "fp8rl %s: error: %s\n\n%s", command.name, e.what(), parser.usage().c_str());
    return 2;
  } catch (const LibraryError& e) {
    std::fprintf(stderr, "fp8rl %s: error: %s\n", command.name, e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp8rl %s: internal error: %s\n", command.name, e.what());
    return 1;
  }
}

}  // namespace
}  // namespace fp8rl_cli

int main(int argc, char** argv) {
  using namespace fp8rl_cli;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    print_overview(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("fp8rl %s\n", fp8rl_version_string());
    return 0;
  }
  for (const Command& c : commands()) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      const World world;  // outlives every context the command creates
      set_world(&world);
      const int status = run_command(c, std::vector<std::string>(argv + 2, argv + argc));
      if (status != 0) world.end_job_after_failure(status);
      set_world(nullptr);
      return status;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fp8rl %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "fp8rl: error: unknown command '%s'\n\n", argv[1]);
  print_overview(stderr);
  return 2;
}
