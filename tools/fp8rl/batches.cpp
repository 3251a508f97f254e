#include "batches.h"

#include "cli_error.h"

namespace fp8rl_cli {

void BatchData::add(const std::vector<int32_t>& prompt, const std::vector<int32_t>& completion) {
  tokens.insert(tokens.end(), prompt.begin(), prompt.end());
  tokens.insert(tokens.end(), completion.begin(), completion.end());
  offsets.push_back(static_cast<int64_t>(tokens.size()));
  prompt_lengths.push_back(static_cast<int64_t>(prompt.size()));
  completion_tokens += static_cast<int64_t>(completion.size());
}

fp8rl_train_batch BatchData::view() const {
  fp8rl_train_batch b;
  check(fp8rl_train_batch_init(&b), "fp8rl_train_batch_init");
  b.tokens = tokens.data();
  b.offsets = offsets.data();
  b.num_sequences = static_cast<int64_t>(prompt_lengths.size());
  b.prompt_lengths = prompt_lengths.data();
  b.num_completion_tokens = completion_tokens;
  b.logp_gen = logp_gen.empty() ? nullptr : logp_gen.data();
  b.rewards = rewards.empty() ? nullptr : rewards.data();
  b.experts = experts.empty() ? nullptr : experts.data();
  b.num_expert_choices = static_cast<int64_t>(experts.size());
  b.generation_seconds = generation_seconds;
  return b;
}

BatchData sft_batch(const TaskSource& source, const std::vector<Problem>& problems) {
  BatchData batch;
  for (const Problem& p : problems) batch.add(source.prompt_tokens(p), source.answer_tokens(p));
  return batch;
}

BatchData grpo_batch(TaskSource& source, const std::vector<Problem>& problems, int64_t group,
                     const Generated& generated) {
  BatchData batch;
  batch.generation_seconds = generated.seconds;
  for (size_t i = 0; i < generated.completions.size(); ++i) {
    const Problem& problem = problems[i / static_cast<size_t>(group)];
    const Completion& c = generated.completions[i];
    batch.add(source.prompt_tokens(problem), c.tokens);
    batch.logp_gen.insert(batch.logp_gen.end(), c.logprobs.begin(), c.logprobs.end());
    batch.experts.insert(batch.experts.end(), c.experts.begin(), c.experts.end());
    batch.rewards.push_back(static_cast<float>(source.reward(problem, c.tokens)));
  }
  return batch;
}

}  // namespace fp8rl_cli
