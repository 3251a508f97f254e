// Full-sequence passes, as training runs them: every token of a sequence is
// fed at once (chunked by the runner), and the wanted next-token rows are
// reduced to log-probs (or kept as logits) pass by pass, so memory stays
// bounded by the pass limits and one group's KV cache. Scoring a group moves
// one upload per pass (the targets and sampling rows travel with the pass's
// indices) and one download (the group's log-probs).
#include <algorithm>

#include "core/policy/model_runner.h"
#include "core/rollout/rollout.h"
#include "core/rollout/sequence_batch.h"

namespace fp8rl::rollout {
namespace {

// Sequences are scored in groups of consecutive sequences feeding at most
// this many tokens (or one longer sequence), each group with its own cache.
constexpr int64_t kGroupTokens = 16384;

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
  for (const SequenceGroup& group : group_sequences(sequences, 0, sequences.count, kGroupTokens, false)) {
    policy::TokenBatch batch =
        sequence_batch(sequences, group.begin, group.end, false, LogitRows::completions, prompt_lengths);
    const size_t n = batch.row_targets.size();
    batch.row_params.assign(n, row);
    results.reserve_discarding(backend, n);
    // One-token sequences feed nothing; a cache has at least one row.
    policy::KvCache cache(backend, policy.compiled(), model::kv_dim(config), std::max<int64_t>(group.tokens, 1));
    policy.runner().run(policy.compiled(), policy.attention_scales(), batch, cache, limits,
                        [&](int64_t first, int64_t count, const float* logits) {
                          const policy::PassIndices& pass = policy.runner().pass_indices();
                          backend.token_logprobs(logits, count, config.vocab_size, pass.row_params, pass.row_targets,
                                                 results.data() + first);
                        });
    results.download(logprobs.data() + written, n);
    written += static_cast<int64_t>(n);
  }
  return logprobs;
}

std::vector<float> full_logits(policy::Policy& policy, const TokenSequences& sequences) {
  const model::ModelConfig& config = policy.config();
  Backend& backend = policy.context().backend();
  validate_sequences(sequences, config.vocab_size, config.max_position_embeddings, "sequence");
  const int64_t vocab = config.vocab_size;
  std::vector<float> logits(static_cast<size_t>(sequences.total_tokens() * vocab));
  int64_t written_rows = 0;
  for (const SequenceGroup& group : group_sequences(sequences, 0, sequences.count, kGroupTokens, true)) {
    const policy::TokenBatch batch = sequence_batch(sequences, group.begin, group.end, true, LogitRows::all);
    policy::KvCache cache(backend, policy.compiled(), model::kv_dim(config), group.tokens);
    policy.runner().run(policy.compiled(), policy.attention_scales(), batch, cache, policy::PassLimits{},
                        [&](int64_t first, int64_t count, const float* rows) {
                          float* out = logits.data() + (written_rows + first) * vocab;
                          backend.download(out, rows, static_cast<size_t>(count * vocab) * sizeof(float));
                        });
    written_rows += group.tokens;
  }
  return logits;
}

}  // namespace fp8rl::rollout
