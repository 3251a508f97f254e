// `fp8rl export-fp8`: an HF model folder -> an FP8 block-quantized HF folder
// (128x128 weight blocks, the layout vLLM and SGLang load).
#include <cstdio>

#include "commands.h"
#include "handles.h"
#include "model_flags.h"
#include "model_setup.h"

namespace fp8rl_cli {

void declare_export_fp8(ArgParser& p) {
  p.option("model", "", "HF model folder to read (required)");
  p.option("out", "", "folder to write (required)");
  p.option("scale-format", "fp32", "block scales: fp32|pow2");
  declare_threads_flag(p);
}

int run_export_fp8(const ArgParser& p) {
  const std::string model = p.required("model");
  const std::string out = p.required("out");
  const std::string scales = p.choice("scale-format", {"fp32", "pow2"});
  Context context(threads(p));
  const Policy policy = load_policy(context, model);
  fp8rl_recipe recipe = generator_recipe("fp8");
  recipe.scale_format = scales == "pow2" ? FP8RL_SCALE_POW2 : FP8RL_SCALE_FP32;
  set_recipe(policy, recipe);  // the export quantizes with the recipe's scale format
  check(fp8rl_policy_export_fp8(policy.get(), out.c_str()), "fp8rl_policy_export_fp8");
  std::printf("wrote %s (FP8 E4M3, 128x128 blocks, %s scales)\n", out.c_str(), scales.c_str());
  return 0;
}

}  // namespace fp8rl_cli
