// The FP8 export against an independent Python check (numpy + ml_dtypes):
// block scales, E4M3 codes, BF16 remainder, names and quantization_config;
// and its round trip through the loader (export -> load -> export, same bytes).
#include "core/policy/fp8_export.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "core/policy/policy_load.h"

#include "io/io_test_support.h"
#include "model/same_files.h"
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

TEST_CASE("FP8 export: export -> load -> export writes the same bytes (FP32 and power-of-2 scales, sharded too)") {
  TempDir temp;
  Context context(cpu_request(2), Logger());
  for (const NamedConfig& named : forward_configs()) {
    for (ScaleFormat format : {ScaleFormat::fp32, ScaleFormat::pow2}) {
      for (int64_t shard_bytes : {int64_t{5} << 30, int64_t{3000}}) {
        CAPTURE(std::string(named.name));
        CAPTURE(static_cast<int>(format));
        CAPTURE(shard_bytes);
        policy::Recipe recipe;
        recipe.linear = policy::Precision::fp8;
        recipe.scale_format = format;
        policy::Policy source(context, tiny_params(named.config), recipe);
        const std::string first = temp.file("first"), second = temp.file("second");
        std::filesystem::remove_all(first);
        std::filesystem::remove_all(second);
        policy::export_fp8_checkpoint(source, first, shard_bytes);
        // Loaded as fp8rl_policy_load loads it: FP8 linears running the stored bits.
        model::LoadedCheckpoint checkpoint = model::load_hf_checkpoint(first);
        const policy::Recipe loaded_recipe = policy::checkpoint_recipe(checkpoint);
        CHECK(loaded_recipe.linear == policy::Precision::fp8);
        auto loaded = policy::policy_from_checkpoint(context, std::move(checkpoint), loaded_recipe);
        policy::export_fp8_checkpoint(*loaded, second, shard_bytes);
        check_same_files(first, second);
        if (format == ScaleFormat::fp32) {
          // Under a BF16 recipe the export requantizes the dequantized masters,
          // which gives amax / 448 scales back exactly.
          std::filesystem::remove_all(second);
          auto bf16 = policy::policy_from_checkpoint(context, model::load_hf_checkpoint(first), policy::Recipe{});
          policy::export_fp8_checkpoint(*bf16, second, shard_bytes);
          check_same_files(first, second);
        }
      }
    }
  }
}

TEST_CASE("FP8 export: E4M3 weights in 128x128 blocks with weight_scale_inv, as an independent check recomputes") {
  TempDir temp;
  Context context(cpu_request(2), Logger());
  for (const NamedConfig& named : forward_configs()) {
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
