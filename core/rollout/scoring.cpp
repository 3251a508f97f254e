// Full-sequence passes, as training runs them: every token of a sequence is
// fed at once (chunked by the runner), and the wanted next-token rows are
// reduced to log-probs (or kept as logits) pass by pass, so memory stays
// bounded by the pass limits and one group's KV cache. Scoring a group moves
// one upload per pass (the targets and sampling rows travel with the pass's
// indices) and one download (the group's log-probs).
#include <algorithm>

#include "core/policy/model_runner.h"
#include "core/rollout/rollout.h"

namespace fp8rl::rollout {
namespace {

// Sequences are scored in groups of consecutive sequences holding at most
// this many tokens (or one longer sequence), each group with its own cache.
constexpr int64_t kGroupTokens = 16384;

// Calls visit(begin, end) for consecutive groups of sequences.
template <class Visit>
void for_each_group(const TokenSequences& sequences, Visit&& visit) {
  int64_t begin = 0;
  while (begin < sequences.count) {
    int64_t end = begin + 1;
    int64_t tokens = sequences.length(begin);
    while (end < sequences.count && tokens + sequences.length(end) <= kGroupTokens) tokens += sequences.length(end++);
    visit(begin, end, tokens);
    begin = end;
  }
}

// The tokens of sequences [begin, end) as one batch, each sequence's cache
// rows after the previous one's. A token wants logits when wanted(i, p); the
// last token of a sequence is fed only when feed_last (its logits predict
// nothing inside the sequence). With targets, each wanted token gets token
// p + 1 as its row target (scoring feeds no last token, so it has one).
template <class Wanted>
policy::TokenBatch group_batch(const TokenSequences& sequences, int64_t begin, int64_t end, bool feed_last,
                               Wanted&& wanted, bool targets = false) {
  policy::TokenBatch batch;
  int64_t first_row = 0;
  for (int64_t i = begin; i < end; ++i) {
    const int32_t* tokens = sequences.sequence(i);
    const int64_t fed = sequences.length(i) - (feed_last ? 0 : 1);
    for (int64_t p = 0; p < fed; ++p) {
      const bool logits = wanted(i, p);
      batch.add(tokens[p], static_cast<int32_t>(p), first_row, logits);
      if (logits && targets) batch.row_targets.push_back(tokens[p + 1]);
    }
    first_row += sequences.length(i);
  }
  return batch;
}

}  // namespace

std::vector<float> score_completions(policy::Policy& policy, const TokenSequences& sequences,
                                     const std::vector<int64_t>& prompt_lengths, const SamplingOptions& options) {
  const model::ModelConfig& config = policy.config();
  Backend& backend = policy.context().backend();
  validate_sampling_options(options, config);
  // The last token is never fed, so a sequence may be one longer than the
  // positions: generation stops on a full context after emitting that token.
  validate_sequences(sequences, config.vocab_size, config.max_position_embeddings + 1, "sequence");
  require(static_cast<int64_t>(prompt_lengths.size()) == sequences.count,
          "score: " + std::to_string(prompt_lengths.size()) + " prompt lengths for " + std::to_string(sequences.count) +
              " sequences");
  int64_t completion_tokens = 0;
  for (int64_t i = 0; i < sequences.count; ++i) {
    const int64_t prompt = prompt_lengths[static_cast<size_t>(i)];
    require(prompt >= 1 && prompt <= sequences.length(i), "score: prompt length " + std::to_string(prompt) +
                                                              " of sequence " + std::to_string(i) + " must be in [1, " +
                                                              std::to_string(sequences.length(i)) + "]");
    completion_tokens += sequences.length(i) - prompt;
  }
  std::vector<float> logprobs(static_cast<size_t>(completion_tokens));
  if (completion_tokens == 0) return logprobs;

  const SamplingRow row = sampling_row(options, 0.0);
  policy::PassLimits limits;
  limits.max_tokens = options.max_tokens_per_step;
  DeviceArray<float> results;  // [group's completion tokens]

  int64_t written = 0;
  for_each_group(sequences, [&](int64_t begin, int64_t end, int64_t tokens) {
    // The logits at position p predict token p + 1: completion tokens start at the prompt length.
    auto wanted = [&](int64_t i, int64_t p) {
      return p >= prompt_lengths[static_cast<size_t>(i)] - 1 && p + 1 < sequences.length(i);
    };
    policy::TokenBatch batch = group_batch(sequences, begin, end, false, wanted, true);
    const size_t n = batch.row_targets.size();
    batch.row_params.assign(n, row);
    results.reserve_discarding(backend, n);
    policy::KvCache cache(backend, policy.compiled(), model::kv_dim(config), tokens);
    policy.runner().run(policy.compiled(), policy.attention_scales(), batch, cache, limits,
                        [&](int64_t first, int64_t count, const float* logits) {
                          const policy::PassIndices& pass = policy.runner().pass_indices();
                          backend.token_logprobs(logits, count, config.vocab_size, pass.row_params, pass.row_targets,
                                                 results.data() + first);
                        });
    results.download(logprobs.data() + written, n);
    written += static_cast<int64_t>(n);
  });
  return logprobs;
}

std::vector<float> full_logits(policy::Policy& policy, const TokenSequences& sequences) {
  const model::ModelConfig& config = policy.config();
  Backend& backend = policy.context().backend();
  validate_sequences(sequences, config.vocab_size, config.max_position_embeddings, "sequence");
  const int64_t vocab = config.vocab_size;
  std::vector<float> logits(static_cast<size_t>(sequences.total_tokens() * vocab));
  int64_t written_rows = 0;
  for_each_group(sequences, [&](int64_t begin, int64_t end, int64_t tokens) {
    const policy::TokenBatch batch = group_batch(sequences, begin, end, true, [](int64_t, int64_t) { return true; });
    policy::KvCache cache(backend, policy.compiled(), model::kv_dim(config), tokens);
    policy.runner().run(policy.compiled(), policy.attention_scales(), batch, cache, policy::PassLimits{},
                        [&](int64_t first, int64_t count, const float* rows) {
                          float* out = logits.data() + (written_rows + first) * vocab;
                          backend.download(out, rows, static_cast<size_t>(count * vocab) * sizeof(float));
                        });
    written_rows += tokens;
  });
  return logits;
}

}  // namespace fp8rl::rollout
