// The FP8 export against an independent Python check (numpy + ml_dtypes):
// block scales, E4M3 codes, BF16 remainder, names and quantization_config.
#include "core/policy/fp8_export.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "io/io_test_support.h"
#include "policy_test_support.h"

#ifndef FP8RL_EXPORT_ORACLE_SCRIPT
#error "FP8RL_EXPORT_ORACLE_SCRIPT must name tests/policy/check_fp8_export.py"
#endif

namespace fp8rl::test {
namespace {

int run_export_oracle(const std::string& fp8_folder, const std::string& f32_folder, const char* scale_format) {
  const char* python = std::getenv("FP8RL_PYTHON");
  const std::string command = std::string(python && *python ? python : "python3") + " '" + FP8RL_EXPORT_ORACLE_SCRIPT +
                              "' '" + fp8_folder + "' '" + f32_folder + "' " + scale_format;
  return std::system(command.c_str());
}

}  // namespace

TEST_CASE("FP8 export: E4M3 weights in 128x128 blocks with weight_scale_inv, as an independent check recomputes") {
  TempDir temp;
  Context context(cpu_request(2), Logger());
  for (const NamedConfig& named : tiny_configs()) {
    for (ScaleFormat format : {ScaleFormat::fp32, ScaleFormat::pow2}) {
      CAPTURE(std::string(named.name));
      CAPTURE(static_cast<int>(format));
      policy::Recipe recipe;
      recipe.linear = policy::Precision::fp8;
      recipe.scale_format = format;
      policy::Policy policy(context, tiny_params(named.config), recipe);
      const std::string base = temp.file(std::string(named.name) + (format == ScaleFormat::pow2 ? "-pow2" : "-fp32"));
      model::save_hf_model(base + "-master", policy.params(), io::DType::f32);
      policy::export_fp8_checkpoint(policy, base + "-fp8");
      CHECK(run_export_oracle(base + "-fp8", base + "-master", format == ScaleFormat::pow2 ? "pow2" : "fp32") == 0);
    }
  }
}

TEST_CASE("FP8 export: the oracle rejects a tampered export (it can fail)") {
  TempDir temp;
  Context context(cpu_request(1), Logger());
  policy::Policy policy(context, tiny_params(tiny_llama()));
  model::save_hf_model(temp.file("master"), policy.params(), io::DType::f32);
  policy::export_fp8_checkpoint(policy, temp.file("fp8"));
  // Checked as power-of-2 scales while the recipe used FP32 ones.
  CHECK(run_export_oracle(temp.file("fp8"), temp.file("master"), "pow2") != 0);
}

}  // namespace fp8rl::test
