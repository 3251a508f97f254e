// The rollout engine: continuous batching over a fixed number of KV-cache
// slots. Each iteration admits waiting prompts into free slots, then runs one
// batch holding the admitted prompts (prefill, chunked by the runner) and one
// decode token of every running sequence, and samples the next token of each.
#include <algorithm>
#include <deque>
#include <set>

#include "core/policy/model_runner.h"
#include "core/rollout/rollout.h"
#include "kernels/common/counter_rng.h"

namespace fp8rl::rollout {
namespace {

using policy::TokenBatch;

struct Sequence {
  int64_t request = 0;
  int64_t slot = 0;
  bool prefilled = false;  // the prompt is in the cache
};

class Engine {
 public:
  Engine(policy::Policy& policy, const TokenSequences& prompts, const std::vector<uint64_t>& seeds,
         const SamplingOptions& options, const LogitsObserver& observer)
      : policy_(policy),
        backend_(policy.context().backend()),
        config_(policy.config()),
        prompts_(prompts),
        seeds_(seeds),
        options_(options),
        observer_(observer),
        rollouts_(static_cast<size_t>(prompts.count)) {
    stop_ids_.insert(options.stop_token_ids.begin(), options.stop_token_ids.end());
    if (options.stop_at_eos) {
      for (int64_t id : config_.eos_token_ids) stop_ids_.insert(static_cast<int32_t>(id));
    }
    int64_t longest = 0;
    for (int64_t i = 0; i < prompts.count; ++i) longest = std::max(longest, prompts.length(i));
    slot_rows_ = std::min(longest + options.max_new_tokens - 1, config_.max_position_embeddings);
    const int64_t slots =
        options.batch_slots == 0 ? prompts.count : std::min<int64_t>(options.batch_slots, prompts.count);
    for (int64_t s = 0; s < slots; ++s) free_slots_.push_back(s);
    for (int64_t r = 0; r < prompts.count; ++r) waiting_.push_back(r);
    cache_ = std::make_unique<policy::KvCache>(backend_, policy.compiled(), model::kv_dim(config_), slots * slot_rows_);
  }

  std::vector<Rollout> run() {
    while (!waiting_.empty() || !running_.empty()) {
      admit();
      step();
    }
    return std::move(rollouts_);
  }

 private:
  void admit() {
    while (!waiting_.empty() && !free_slots_.empty()) {
      running_.push_back(Sequence{waiting_.front(), free_slots_.front(), false});
      waiting_.pop_front();
      free_slots_.pop_front();
    }
  }

  // One batch: prompts of newly admitted sequences, the last token of the others.
  void step() {
    batch_.clear();
    for (const Sequence& sequence : running_) {
      const int64_t first_row = sequence.slot * slot_rows_;
      const Rollout& rollout = rollouts_[static_cast<size_t>(sequence.request)];
      const int64_t prompt_length = prompts_.length(sequence.request);
      if (!sequence.prefilled) {
        const int32_t* prompt = prompts_.sequence(sequence.request);
        for (int64_t p = 0; p < prompt_length; ++p) {
          batch_.add(prompt[p], static_cast<int32_t>(p), first_row, p == prompt_length - 1);
        }
      } else {
        const int64_t position = prompt_length + static_cast<int64_t>(rollout.tokens.size()) - 1;
        batch_.add(rollout.tokens.back(), static_cast<int32_t>(position), first_row, true);
      }
    }
    policy::PassLimits limits;
    limits.max_tokens = options_.max_tokens_per_step;
    policy_.runner().run(policy_.compiled(), policy_.attention_scales(), batch_, *cache_, limits,
                         [&](int64_t first, int64_t count, const float* logits) { sample(first, count, logits); });
    retire_finished();
  }

  // Samples the next token of running_[first .. first + count): the batch
  // wants exactly one logits row per running sequence, in running_ order.
  void sample(int64_t first, int64_t count, const float* logits) {
    const size_t n = static_cast<size_t>(count);
    std::vector<SamplingRow> rows(n);
    for (size_t i = 0; i < n; ++i) {
      const Sequence& sequence = running_[static_cast<size_t>(first) + i];
      const uint64_t draw = rollouts_[static_cast<size_t>(sequence.request)].tokens.size();
      rows[i] = sampling_row(options_, counter_uniform(seeds_[static_cast<size_t>(sequence.request)], draw));
    }
    params_.reserve_discarding(backend_, n);
    tokens_.reserve_discarding(backend_, n);
    logprobs_.reserve_discarding(backend_, n);
    params_.upload(rows.data(), n);
    backend_.sample(logits, count, config_.vocab_size, params_.data(), tokens_.data(), logprobs_.data());
    std::vector<int32_t> tokens(n);
    std::vector<float> logprobs(n);
    tokens_.download(tokens.data(), n);
    logprobs_.download(logprobs.data(), n);
    if (observer_) observe(first, count, logits);
    for (size_t i = 0; i < n; ++i) {
      Sequence& sequence = running_[static_cast<size_t>(first) + i];
      Rollout& rollout = rollouts_[static_cast<size_t>(sequence.request)];
      rollout.tokens.push_back(tokens[i]);
      rollout.logprobs.push_back(logprobs[i]);
      sequence.prefilled = true;
    }
  }

  void observe(int64_t first, int64_t count, const float* logits) {
    const int64_t vocab = config_.vocab_size;
    std::vector<float> host(static_cast<size_t>(count * vocab));
    backend_.download(host.data(), logits, host.size() * sizeof(float));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t request = running_[static_cast<size_t>(first + i)].request;
      // Called before the new tokens are appended: the step is the current length.
      const int64_t step = static_cast<int64_t>(rollouts_[static_cast<size_t>(request)].tokens.size());
      observer_(request, step, host.data() + i * vocab, vocab);
    }
  }

  void retire_finished() {
    std::vector<Sequence> still_running;
    for (const Sequence& sequence : running_) {
      Rollout& rollout = rollouts_[static_cast<size_t>(sequence.request)];
      const int64_t generated = static_cast<int64_t>(rollout.tokens.size());
      // The last token would be fed at position prompt_length + generated - 1.
      const int64_t next_position = prompts_.length(sequence.request) + generated - 1;
      if (stop_ids_.count(rollout.tokens.back())) {
        rollout.finish = FinishReason::stop;
      } else if (generated >= options_.max_new_tokens) {
        rollout.finish = FinishReason::length;
      } else if (next_position >= config_.max_position_embeddings) {
        rollout.finish = FinishReason::context_full;
      } else {
        still_running.push_back(sequence);
        continue;
      }
      free_slots_.push_back(sequence.slot);
    }
    running_ = std::move(still_running);
  }

  policy::Policy& policy_;
  Backend& backend_;
  const model::ModelConfig& config_;
  const TokenSequences& prompts_;
  const std::vector<uint64_t>& seeds_;
  const SamplingOptions& options_;
  const LogitsObserver& observer_;
  std::vector<Rollout> rollouts_;
  std::set<int32_t> stop_ids_;
  int64_t slot_rows_ = 0;  // cache rows per slot: the longest prompt plus max_new_tokens - 1
  std::deque<int64_t> free_slots_;
  std::deque<int64_t> waiting_;
  std::vector<Sequence> running_;
  std::unique_ptr<policy::KvCache> cache_;
  TokenBatch batch_;
  DeviceArray<SamplingRow> params_;
  DeviceArray<int32_t> tokens_;
  DeviceArray<float> logprobs_;
};

}  // namespace

std::vector<Rollout> generate(policy::Policy& policy, const TokenSequences& prompts, const std::vector<uint64_t>& seeds,
                              const SamplingOptions& options, const LogitsObserver& observer) {
  const model::ModelConfig& config = policy.config();
  validate_sampling_options(options, config);
  validate_sequences(prompts, config.vocab_size, config.max_position_embeddings, "prompt");
  require(static_cast<int64_t>(seeds.size()) == prompts.count,
          "generate: " + std::to_string(seeds.size()) + " seeds for " + std::to_string(prompts.count) + " prompts");
  return Engine(policy, prompts, seeds, options, observer).run();
}

}  // namespace fp8rl::rollout
