// Rollout batches for trainer tests: generate from a policy, then lay the
// prompts and completions out as a TrainBatch.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rollout/rollout.h"
#include "core/train/trainer.h"
#include "policy/policy_test_support.h"

namespace fp8rl::test {

struct RolloutBatch {
  FlatSequences sequences;  // prompt + completion
  std::vector<int64_t> prompt_lengths;
  std::vector<float> logp_gen;  // [completion tokens]
  std::vector<float> rewards;   // [sequences]
  std::vector<int32_t> experts;  // [fed tokens, sparse layers, k] when the sampling recorded them

  train::TrainBatch view() const {
    train::TrainBatch batch;
    batch.sequences = sequences.view();
    batch.prompt_lengths = prompt_lengths.data();
    batch.logp_gen = logp_gen.data();
    batch.rewards = rewards.data();
    batch.experts = experts.empty() ? nullptr : experts.data();
    return batch;
  }
  int64_t completion_tokens() const { return static_cast<int64_t>(logp_gen.size()); }
};

// Small steps, truncated importance weights, GRPO groups of two, several
// micro-batches per step.
inline train::TrainerOptions test_options() {
  train::TrainerOptions options;
  options.schedule.base_lr = 1e-3;
  options.loss.importance.mode = train::ImportanceMode::truncated;
  options.advantages.group_size = 2;
  options.advantages.normalize_by_std = true;
  options.micro_batch_tokens = 40;
  return options;
}

inline rollout::SamplingOptions test_sampling(int32_t max_new_tokens = 12) {
  rollout::SamplingOptions sampling;
  sampling.max_new_tokens = max_new_tokens;
  sampling.stop_at_eos = false;
  return sampling;
}

// Rewards: the fraction of completion tokens below vocab / 2 (anything that
// differs between completions does).
inline RolloutBatch generate_batch(policy::Policy& policy, const FlatSequences& prompts,
                                   const std::vector<uint64_t>& seeds, const rollout::SamplingOptions& sampling) {
  const std::vector<rollout::Rollout> rollouts = rollout::generate(policy, prompts.view(), seeds, sampling);
  RolloutBatch batch;
  const int64_t vocab = policy.config().vocab_size;
  for (size_t i = 0; i < rollouts.size(); ++i) {
    const int32_t* prompt = prompts.view().sequence(static_cast<int64_t>(i));
    std::vector<int32_t> sequence(prompt, prompt + prompts.view().length(static_cast<int64_t>(i)));
    batch.prompt_lengths.push_back(static_cast<int64_t>(sequence.size()));
    sequence.insert(sequence.end(), rollouts[i].tokens.begin(), rollouts[i].tokens.end());
    batch.sequences.add(sequence);
    batch.logp_gen.insert(batch.logp_gen.end(), rollouts[i].logprobs.begin(), rollouts[i].logprobs.end());
    batch.experts.insert(batch.experts.end(), rollouts[i].experts.begin(), rollouts[i].experts.end());
    int64_t low = 0;
    for (int32_t token : rollouts[i].tokens) low += token < vocab / 2 ? 1 : 0;
    batch.rewards.push_back(static_cast<float>(low) /
                            static_cast<float>(std::max<size_t>(rollouts[i].tokens.size(), 1)));
  }
  return batch;
}

// Two consecutive copies of a prompt of each length: GRPO groups of two.
inline FlatSequences paired_prompts(const model::ModelConfig& config, const std::vector<int64_t>& lengths) {
  FlatSequences prompts;
  const FlatSequences distinct = test_prompts(lengths, config.vocab_size);
  for (int64_t i = 0; i < distinct.view().count; ++i) {
    const int32_t* p = distinct.view().sequence(i);
    const std::vector<int32_t> prompt(p, p + distinct.view().length(i));
    prompts.add(prompt);
    prompts.add(prompt);
  }
  return prompts;
}

inline std::vector<uint64_t> seeds_from(uint64_t first, size_t n) {
  std::vector<uint64_t> seeds(n);
  for (size_t i = 0; i < n; ++i) seeds[i] = first + i;
  return seeds;
}

inline bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return false;
  return true;
}

inline bool same_weights(const model::ModelParams& a, const model::ModelParams& b) {
  bool same = true;
  model::ModelParams& ma = const_cast<model::ModelParams&>(a);
  model::ModelParams& mb = const_cast<model::ModelParams&>(b);
  std::vector<const std::vector<float>*> left, right;
  model::for_each_tensor(
      ma, [&](const std::string&, const std::vector<int64_t>&, model::HostTensor& t) { left.push_back(&t.data); });
  model::for_each_tensor(
      mb, [&](const std::string&, const std::vector<int64_t>&, model::HostTensor& t) { right.push_back(&t.data); });
  if (left.size() != right.size()) return false;
  for (size_t i = 0; i < left.size(); ++i) same = same && same_floats(*left[i], *right[i]);
  return same;
}

}  // namespace fp8rl::test
