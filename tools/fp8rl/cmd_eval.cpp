// `fp8rl eval`: the accuracy of an HF model folder on a JSONL text dataset,
// with greedy completions scored by a text reward, as `fp8rl train --data`
// validates.
#include <algorithm>
#include <cstdio>
#include <string>

#include "commands.h"
#include "evaluation.h"
#include "handles.h"
#include "model_flags.h"
#include "model_setup.h"
#include "text_task.h"

namespace fp8rl_cli {

void declare_eval(ArgParser& p) {
  p.option("init-from", "", "HF model folder (required): weights, and tokenizer.json for the text");
  p.option("data", "", "JSONL rows {\"prompt\": ..., \"answer\": ...} to evaluate (required)");
  declare_text_flags(p);
  p.option("limit", "0", "evaluate the first N rows (0 = all)");
  p.option("max-new-tokens", "0", "completion limit (0 = longest answer + 3)");
  p.option("recipe", "bf16",
           recipe_choices() + " (fp8-gen generates as fp8-kv, fp8-gen-linear as fp8; *-head: FP8 LM head)");
  p.option("show", "0", "print the first N rows with their completions and rewards");
  declare_threads_flag(p);
}

int run_eval(const ArgParser& p) {
  TextTaskOptions o;
  o.folder = p.required("init-from");
  o.val = p.required("data");
  read_text_flags(p, o);
  const int64_t limit = p.integer("limit", 0, INT64_MAX);
  o.val_size = limit > 0 ? limit : INT64_MAX;
  const int64_t show = p.integer("show", 0, INT64_MAX);
  const int requested_tokens = static_cast<int>(p.integer("max-new-tokens", 0, 1 << 20));
  const std::string recipe = p.choice("recipe", recipe_names());

  const std::unique_ptr<TaskSource> source =
      make_text_source(o, [](const std::string& text) { std::fprintf(stderr, "fp8rl eval: %s\n", text.c_str()); });
  Context context(threads(p));
  const Policy policy = load_policy(context, o.folder);
  source->check_vocabulary(policy_config(policy), o.folder);
  set_recipe(policy, generator_recipe(recipe));
  const int max_new_tokens = requested_tokens > 0 ? requested_tokens : source->default_max_new_tokens();
  const std::vector<Problem>& problems = source->validation_problems();
  const Evaluation e = evaluate_problems(policy, *source, problems, max_new_tokens);

  for (size_t i = 0; i < std::min<size_t>(problems.size(), static_cast<size_t>(std::min<int64_t>(show, INT32_MAX)));
       ++i) {
    std::printf("[%zu] reward %g\n  prompt:     %s\n  answer:     %s\n  completion: %s\n", i, e.rewards[i],
                problems[i].prompt.c_str(), problems[i].answer.c_str(),
                source->completion_text(e.completions[i].tokens).c_str());
  }
  const auto n = static_cast<long long>(problems.size());
  std::printf("accuracy %.1f%% (%lld of %lld rows with reward 1), mean reward %.4f\n",
              n > 0 ? 100.0 * static_cast<double>(e.correct) / static_cast<double>(n) : 0.0,
              static_cast<long long>(e.correct), n, e.mean_reward);
  return 0;
}

}  // namespace fp8rl_cli
