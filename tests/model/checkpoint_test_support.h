// Helpers shared by the tests/model checkpoint suites: the Python oracle
// (tests/model/make_hf_folder.py), reference files and error expectations.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/model/model_params.h"
#include "io/io_test_support.h"
#include "kernels/error.h"
#include "support/expect_error.h"

#ifndef FP8RL_MODEL_ORACLE_SCRIPT
#error "FP8RL_MODEL_ORACLE_SCRIPT must name tests/model/make_hf_folder.py"
#endif

namespace fp8rl::test {

// Runs the oracle with $FP8RL_PYTHON (python3 when unset); arguments are
// single-quoted, so they must not contain quotes.
inline int run_model_oracle(const std::vector<std::string>& arguments) {
  const char* python = std::getenv("FP8RL_PYTHON");
  std::string command = std::string(python && *python ? python : "python3") + " '" + FP8RL_MODEL_ORACLE_SCRIPT + "'";
  for (const std::string& argument : arguments) command += " '" + argument + "'";
  return std::system(command.c_str());
}

// Runs several oracle commands in one Python process (its start-up, with
// numpy and ml_dtypes, costs more than the work): `scratch` is a file path
// for the command list. Arguments must not contain tabs or newlines.
inline int run_model_oracle_batch(const std::string& scratch, const std::vector<std::vector<std::string>>& commands) {
  std::string text;
  for (const std::vector<std::string>& command : commands) {
    for (size_t i = 0; i < command.size(); ++i) text += (i ? "\t" : "") + command[i];
    text += '\n';
  }
  write_bytes(scratch, text);
  return run_model_oracle({"batch", scratch});
}

inline std::vector<float> read_f32(const std::string& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  REQUIRE(bytes.size() % 4 == 0);
  std::vector<float> values(bytes.size() / 4);
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

inline void write_f32(const std::string& path, const std::vector<float>& values) {
  write_bytes(path, std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

// Bitwise equality (so -0 vs 0 and NaN payloads count), reporting the first difference.
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b, std::string& difference) {
  if (a.size() != b.size()) {
    difference = "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      difference = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
      return false;
    }
  }
  return true;
}

// Tensors of a params object by name, in for_each_tensor order.
inline std::vector<std::pair<std::string, const model::HostTensor*>> named_tensors(const model::ModelParams& params) {
  std::vector<std::pair<std::string, const model::HostTensor*>> out;
  model::for_each_tensor(const_cast<model::ModelParams&>(params),
                         [&](const std::string& name, const std::vector<int64_t>&, model::HostTensor& tensor) {
                           out.emplace_back(name, &tensor);
                         });
  return out;
}

}  // namespace fp8rl::test
