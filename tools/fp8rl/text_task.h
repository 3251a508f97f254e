// A JSONL text dataset as a TaskSource: prompts through the model folder's
// own tokenizer (with the special tokens its post-processor adds, e.g. Llama
// 3's BOS), completions that stop at the folder's EOS ids, decoded without
// special tokens and scored by a text reward (text_reward.h). The SFT target
// is the answer's tokens then the first EOS id.
#ifndef FP8RL_TOOLS_TEXT_TASK_H
#define FP8RL_TOOLS_TEXT_TASK_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "task_source.h"
#include "text_dataset.h"
#include "text_reward.h"

namespace fp8rl_cli {

struct TextTaskOptions {
  std::string folder;  // the HF model folder whose tokenizer.json encodes
  std::string train;   // training JSONL; "" for evaluation only
  std::string val;     // validation JSONL; "" = the first val_size training rows
  int64_t val_size = 200;  // rows of the validation file used (the first ones)
  std::string reward;      // make_reward()'s kind
  RewardOptions reward_options;
  TextDatasetOptions dataset;
};

class ArgParser;
// --reward --reward-timeout --prompt-template --prompt-field --answer-field,
// shared by `fp8rl train --data` and `fp8rl eval`.
void declare_text_flags(ArgParser& parser);
// Whether any of them was given.
bool text_flags_given(const ArgParser& parser);
// Their values into `options` (reward required); UsageError for a bad template.
void read_text_flags(const ArgParser& parser, TextTaskOptions& options);

// Throws UsageError for a bad reward kind or template, LibraryError for a
// tokenizer or dataset that cannot be read (naming file and line). `say`
// receives notes for the user.
std::unique_ptr<TaskSource> make_text_source(const TextTaskOptions& options,
                                             const std::function<void(const std::string&)>& say);

}  // namespace fp8rl_cli

#endif  // FP8RL_TOOLS_TEXT_TASK_H
