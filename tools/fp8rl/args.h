// Command-line options of one subcommand: declared with a default and help
// text, parsed from "--name value", "--name=value" or a bare "--flag".
#ifndef FP8RL_TOOLS_ARGS_H
#define FP8RL_TOOLS_ARGS_H

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fp8rl_cli {

class ArgParser {
 public:
  ArgParser(std::string command, std::string summary);

  // An option taking a value; `fallback` is used when it is not given ("" = none).
  void option(const std::string& name, const std::string& fallback, const std::string& help);
  // An option without a value (false unless given).
  void flag(const std::string& name, const std::string& help);

  // Throws UsageError for unknown options, missing values or stray arguments.
  void parse(const std::vector<std::string>& args);

  bool given(const std::string& name) const;
  bool is_set(const std::string& name) const;  // a flag
  std::string text(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;  // a repeatable option, in order
  // Numbers are range-checked; a bad value names the option in the error.
  int64_t integer(const std::string& name, int64_t min, int64_t max) const;
  double real(const std::string& name, double min, double max) const;
  // One of `choices`, else UsageError listing them.
  std::string choice(const std::string& name, const std::vector<std::string>& choices) const;
  // A required option: UsageError if it was not given.
  std::string required(const std::string& name) const;

  // Every option's value in declaration order: the given one (every value of
  // a repeated option, joined by ','), else its default; "1" or "0" for a flag.
  std::vector<std::pair<std::string, std::string>> effective_values() const;

  std::string usage() const;

 private:
  struct Spec {
    std::string fallback;
    std::string help;
    bool is_flag = false;
  };
  const Spec& spec(const std::string& name) const;

  std::string command_;
  std::string summary_;
  std::vector<std::string> order_;
  std::map<std::string, Spec> specs_;
  std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_ARGS_H
