// The subcommands: each declares its options on a parser and runs from the
// parsed values, returning the exit status.
#ifndef FP8RL_TOOLS_COMMANDS_H
#define FP8RL_TOOLS_COMMANDS_H

#include <string>
#include <vector>

#include "args.h"
#include "train_config.h"

namespace fp8rl_cli {

struct Command {
  const char* name;
  const char* summary;
  void (*declare)(ArgParser& parser);
  int (*run)(const ArgParser& parser);
};

const std::vector<Command>& commands();

void declare_train(ArgParser& parser);
int run_train(const ArgParser& parser);
// The run the train options describe (compare shares them).
TrainConfig train_config_from(const ArgParser& parser);
void declare_compare(ArgParser& parser);
int run_compare(const ArgParser& parser);
void declare_generate(ArgParser& parser);
int run_generate(const ArgParser& parser);
void declare_eval(ArgParser& parser);
int run_eval(const ArgParser& parser);
void declare_export_fp8(ArgParser& parser);
int run_export_fp8(const ArgParser& parser);
void declare_info(ArgParser& parser);
int run_info(const ArgParser& parser);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_COMMANDS_H
