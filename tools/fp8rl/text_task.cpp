#include "text_task.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "args.h"
#include "cli_error.h"
#include "hf_tokenizer.h"
#include "rng.h"

namespace fp8rl_cli {
namespace {

class TextSource : public TaskSource {
 public:
  TextSource(const TextTaskOptions& o, const std::function<void(const std::string&)>& say)
      : folder_(o.folder), reward_(make_reward(o.reward, o.reward_options)), tokenizer_(o.folder) {
    stop_ = tokenizer_.eos_ids();
    if (stop_.empty())
      say(o.folder + " names no EOS token (tokenizer_config.json eos_token, generation_config.json eos_token_id): " +
          "completions run to --max-new-tokens and SFT answers end without one");
    if (!o.train.empty()) train_ = add_rows(read_text_dataset(o.train, o.dataset), o.train, INT64_MAX);
    if (!o.val.empty()) {
      const std::vector<TextExample> rows = read_text_dataset(o.val, o.dataset);
      validation_ = add_rows(rows, o.val, o.val_size);
      if (static_cast<int64_t>(rows.size()) > o.val_size)
        say("validating on the first " + std::to_string(o.val_size) + " of " + std::to_string(rows.size()) +
            " rows of " + o.val + " (--val-size)");
    } else {
      validation_.assign(train_.begin(), train_.begin() + std::min<int64_t>(o.val_size, train_.size()));
      say("no --val: accuracy is measured on the first " + std::to_string(validation_.size()) + " training rows");
    }
  }

  std::vector<Problem> training_problems(uint64_t seed, uint64_t stream, int64_t step, int64_t count) const override {
    if (train_.empty()) throw UsageError("no training rows (--data)");
    Rng rng(seed, stream, static_cast<uint64_t>(step));
    std::vector<Problem> problems;
    problems.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) problems.push_back(train_[static_cast<size_t>(rng.below(size(train_)))]);
    return problems;
  }
  const std::vector<Problem>& validation_problems() const override { return validation_; }
  std::vector<int32_t> prompt_tokens(const Problem& problem) const override { return row(problem).prompt_ids; }
  std::vector<int32_t> answer_tokens(const Problem& problem) const override {
    std::vector<int32_t> ids = row(problem).answer_ids;
    if (!stop_.empty()) ids.push_back(stop_.front());
    return ids;
  }
  const std::vector<int32_t>& stop_tokens() const override { return stop_; }
  double reward(const Problem& problem, const std::vector<int32_t>& completion) override {
    const Row& r = row(problem);
    try {
      return reward_->score(problem.prompt, completion_text(completion), problem.answer, r.line);
    } catch (const LibraryError& e) {
      throw LibraryError(r.file + ": " + e.what());
    }
  }
  std::string completion_text(const std::vector<int32_t>& completion) const override {
    std::vector<int32_t> ids = completion;
    // The stop id ends the completion; it is not text even where the tokenizer does not call it special.
    if (!ids.empty() && std::find(stop_.begin(), stop_.end(), ids.back()) != stop_.end()) ids.pop_back();
    return tokenizer_.decode(ids, /*skip_special_tokens=*/true);
  }
  int default_max_new_tokens() const override { return static_cast<int>(longest_answer_ + 1 + 2); }
  int64_t longest_sequence(int max_new_tokens) const override {
    return longest_prompt_ + std::max<int64_t>(longest_answer_ + 1, max_new_tokens);
  }
  int64_t builtin_vocab_size() const override { return 0; }
  void check_vocabulary(const fp8rl_model_config& config, const std::string& folder) const override {
    if (config.vocab_size < tokenizer_.vocab_size())
      throw UsageError(folder + "/config.json has a vocabulary of " + std::to_string(config.vocab_size) +
                       " tokens, its tokenizer.json " + std::to_string(tokenizer_.vocab_size()));
  }

 private:
  struct Row {
    std::string file;
    int64_t line = 0;
    std::vector<int32_t> prompt_ids, answer_ids;
  };

  static int64_t size(const std::vector<Problem>& problems) { return static_cast<int64_t>(problems.size()); }
  const Row& row(const Problem& problem) const { return rows_.at(static_cast<size_t>(problem.id)); }

  // Tokenizes the first `limit` examples once; their problems index rows_.
  std::vector<Problem> add_rows(const std::vector<TextExample>& examples, const std::string& file, int64_t limit) {
    std::vector<Problem> problems;
    for (const TextExample& e : examples) {
      if (size(problems) >= limit) break;
      Row r{file, e.line, tokenizer_.encode(e.prompt, /*add_special_tokens=*/true),
            tokenizer_.encode(e.answer, /*add_special_tokens=*/false)};
      if (r.prompt_ids.empty())
        throw LibraryError(file + ":" + std::to_string(e.line) + ": the prompt is empty (no tokens to start from)");
      longest_prompt_ = std::max<int64_t>(longest_prompt_, static_cast<int64_t>(r.prompt_ids.size()));
      longest_answer_ = std::max<int64_t>(longest_answer_, static_cast<int64_t>(r.answer_ids.size()));
      problems.push_back(Problem{e.prompt, e.answer, static_cast<int64_t>(rows_.size())});
      rows_.push_back(std::move(r));
    }
    return problems;
  }

  std::string folder_;
  std::unique_ptr<Reward> reward_;
  HfTokenizer tokenizer_;
  std::vector<int32_t> stop_;
  std::vector<Row> rows_;
  std::vector<Problem> train_, validation_;
  int64_t longest_prompt_ = 0, longest_answer_ = 0;
};

}  // namespace

namespace {
const char* const kTextFlags[] = {"reward", "reward-timeout", "prompt-template", "prompt-field", "answer-field"};
}  // namespace

void declare_text_flags(ArgParser& p) {
  const TextTaskOptions d;
  p.option("reward", "", "exact|number|regex:PATTERN|cmd:PROGRAM (see docs/text-training.md)");
  p.option("reward-timeout", "30", "cmd: reward: seconds one reply may take");
  p.option("prompt-template", "{prompt}", "applied to each prompt, e.g. \"Question: {prompt}\\nAnswer:\"");
  p.option("prompt-field", d.dataset.prompt_field, "the JSONL field of the prompt");
  p.option("answer-field", d.dataset.answer_field, "the JSONL field of the reference answer");
}

bool text_flags_given(const ArgParser& p) {
  for (const char* flag : kTextFlags)
    if (p.given(flag)) return true;
  return false;
}

void read_text_flags(const ArgParser& p, TextTaskOptions& o) {
  o.reward = p.required("reward");
  o.reward_options.timeout_seconds = p.real("reward-timeout", 1e-3, 1e6);
  o.dataset.prompt_template = PromptTemplate(p.text("prompt-template"));
  o.dataset.prompt_field = p.text("prompt-field");
  o.dataset.answer_field = p.text("answer-field");
}

std::unique_ptr<TaskSource> make_text_source(const TextTaskOptions& options,
                                             const std::function<void(const std::string&)>& say) {
  return std::make_unique<TextSource>(options, say);
}

}  // namespace fp8rl_cli
