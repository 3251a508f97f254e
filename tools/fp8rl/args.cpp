#include "args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cli_error.h"

namespace fp8rl_cli {

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

void ArgParser::option(const std::string& name, const std::string& fallback, const std::string& help) {
  order_.push_back(name);
  specs_[name] = Spec{fallback, help, false};
}

void ArgParser::flag(const std::string& name, const std::string& help) {
  order_.push_back(name);
  specs_[name] = Spec{"", help, true};
}

void ArgParser::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) throw UsageError("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const auto it = specs_.find(name);
    if (it == specs_.end()) throw UsageError("unknown option '--" + name + "'");
    if (it->second.is_flag) {
      if (has_value) throw UsageError("option '--" + name + "' takes no value");
      values_[name].push_back("1");
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) throw UsageError("option '--" + name + "' needs a value");
      value = args[++i];
    }
    values_[name].push_back(value);
  }
}

std::vector<std::pair<std::string, std::string>> ArgParser::effective_values() const {
  std::vector<std::pair<std::string, std::string>> result;
  for (const std::string& name : order_) {
    const Spec& s = spec(name);
    std::string value;
    if (s.is_flag) {
      value = is_set(name) ? "1" : "0";
    } else if (!given(name)) {
      value = s.fallback;
    } else {
      for (const std::string& v : all(name)) value += (value.empty() ? "" : ",") + v;
    }
    result.emplace_back(name, value);
  }
  return result;
}

const ArgParser::Spec& ArgParser::spec(const std::string& name) const {
  const auto it = specs_.find(name);
  // Asking for an undeclared option is a bug in this program, not the user's.
  if (it == specs_.end()) throw std::logic_error("undeclared option --" + name);
  return it->second;
}

bool ArgParser::given(const std::string& name) const {
  spec(name);
  return values_.count(name) != 0;
}

bool ArgParser::is_set(const std::string& name) const { return given(name); }

std::string ArgParser::text(const std::string& name) const {
  const Spec& s = spec(name);
  const auto it = values_.find(name);
  return it == values_.end() ? s.fallback : it->second.back();
}

std::vector<std::string> ArgParser::all(const std::string& name) const {
  spec(name);
  const auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

int64_t ArgParser::integer(const std::string& name, int64_t min, int64_t max) const {
  const std::string value = text(name);
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE) {
    throw UsageError("option '--" + name + "' needs an integer, got '" + value + "'");
  }
  if (parsed < min || parsed > max) {
    throw UsageError("option '--" + name + "' must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                     "], got " + value);
  }
  return parsed;
}

double ArgParser::real(const std::string& name, double min, double max) const {
  const std::string value = text(name);
  char* end = nullptr;
  const double parsed = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(parsed)) {
    throw UsageError("option '--" + name + "' needs a number, got '" + value + "'");
  }
  if (parsed < min || parsed > max) {
    std::ostringstream message;
    message << "option '--" << name << "' must be in [" << min << ", " << max << "], got " << value;
    throw UsageError(message.str());
  }
  return parsed;
}

std::string ArgParser::choice(const std::string& name, const std::vector<std::string>& choices) const {
  const std::string value = text(name);
  std::string listed;
  for (const std::string& c : choices) {
    if (c == value) return value;
    listed += (listed.empty() ? "" : "|") + c;
  }
  throw UsageError("option '--" + name + "' must be one of " + listed + ", got '" + value + "'");
}

std::string ArgParser::required(const std::string& name) const {
  if (!given(name)) throw UsageError("missing required option '--" + name + "'");
  return text(name);
}

std::string ArgParser::usage() const {
  std::ostringstream out;
  out << "usage: fp8rl " << command_ << " [options]\n  " << summary_ << "\n\noptions:\n";
  for (const std::string& name : order_) {
    const Spec& s = specs_.at(name);
    std::string left = "  --" + name + (s.is_flag ? "" : " VALUE");
    if (left.size() < 28) left.resize(28, ' ');
    out << left << " " << s.help;
    if (!s.is_flag && !s.fallback.empty()) out << " (default " << s.fallback << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace fp8rl_cli
