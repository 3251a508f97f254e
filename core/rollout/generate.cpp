// The rollout engine: continuous batching over a fixed number of KV-cache
// slots. Each iteration admits waiting prompts into free slots, then runs one
// batch holding the admitted prompts (prefill, chunked by the runner) and one
// decode token of every running sequence, and samples the next token of each.
// A step's host<->device traffic is fixed: one upload per forward pass (the
// sampling rows, known before the pass, travel with its indices) and one
// download (every sampled token and log-prob), so a decode step waits for
// the device twice, whatever the batch.
#include <algorithm>
#include <deque>
#include <set>

#include "core/policy/model_runner.h"
#include "core/policy/packed_buffer.h"
#include "core/rollout/rollout.h"
#include "kernels/common/counter_rng.h"

namespace fp8rl::rollout {
namespace {

using policy::TokenBatch;

// The one download of a step: [n] int32 sampled tokens, then [n] float log-probs.
struct SampledLayout {
  size_t tokens, logprobs, bytes;
};

SampledLayout sampled_layout(size_t n) {
  PackedLayout packed;
  SampledLayout layout;
  layout.tokens = packed.add<int32_t>(n);
  layout.logprobs = packed.add<float>(n);
  layout.bytes = packed.bytes();
  return layout;
}

// Which sequence and position a token of the current batch is.
struct TokenOwner {
  int64_t request = 0;
  int64_t position = 0;
};

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
        rollouts_(static_cast<size_t>(prompts.count)),
        sampled_(backend_) {
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
    for (int64_t layer = 0; layer < config_.num_layers; ++layer) {
      sparse_index_.push_back(model::is_sparse_layer(config_, layer) ? sparse_layers_++ : -1);
    }
    policy.runner().prepare_positions(slot_rows_);
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

  // Feeds one batch, samples from its logits on the device, then downloads
  // every sampled token and log-prob at once.
  void step() {
    build_batch();
    const SampledLayout layout = sampled_layout(running_.size());
    sampled_.reserve(layout.bytes);
    policy::PassLimits limits;
    limits.max_tokens = options_.max_tokens_per_step;
    const policy::RoutingObserver routing = [&](size_t layer, int64_t first, int64_t tokens, const int32_t* chosen) {
      record_experts(layer, first, tokens, chosen);
    };
    policy_.runner().run(
        policy_.compiled(), policy_.attention_scales(), batch_, *cache_, limits,
        [&](int64_t first, int64_t count, const float* logits) { sample(layout, first, count, logits); }, {}, nullptr,
        options_.record_experts && sparse_layers_ > 0 ? routing : policy::RoutingObserver{});
    sampled_.download(layout.bytes);
    append_sampled(layout);
    retire_finished();
  }

  // Prompts of newly admitted sequences, the last token of the others; each
  // wants the logits of its last token, in running_ order, with its sampling row.
  void build_batch() {
    batch_.clear();
    owners_.clear();
    for (const Sequence& sequence : running_) {
      const int64_t first_row = sequence.slot * slot_rows_;
      const Rollout& rollout = rollouts_[static_cast<size_t>(sequence.request)];
      const int64_t prompt_length = prompts_.length(sequence.request);
      if (!sequence.prefilled) {
        const int32_t* prompt = prompts_.sequence(sequence.request);
        for (int64_t p = 0; p < prompt_length; ++p) {
          batch_.add(prompt[p], static_cast<int32_t>(p), first_row, p == prompt_length - 1);
          owners_.push_back({sequence.request, p});
        }
      } else {
        const int64_t position = prompt_length + static_cast<int64_t>(rollout.tokens.size()) - 1;
        batch_.add(rollout.tokens.back(), static_cast<int32_t>(position), first_row, true);
        owners_.push_back({sequence.request, position});
      }
      // The draw depends on the seed and the token's index, not on the logits.
      const uint64_t draw = rollout.tokens.size();
      batch_.row_params.push_back(
          sampling_row(options_, counter_uniform(seeds_[static_cast<size_t>(sequence.request)], draw)));
    }
  }

  // Samples the next token of running_[first .. first + count) into sampled_.
  void sample(const SampledLayout& layout, int64_t first, int64_t count, const float* logits) {
    backend_.sample(logits, count, config_.vocab_size, policy_.runner().pass_indices().row_params,
                    sampled_.device<int32_t>(layout.tokens) + first, sampled_.device<float>(layout.logprobs) + first);
    if (observer_) observe(first, count, logits);
  }

  // chosen [tokens, k] of sparse layer `layer` for the batch's tokens
  // [first, first + tokens), into each owner's Rollout::experts.
  void record_experts(size_t layer, int64_t first, int64_t tokens, const int32_t* chosen) {
    const int64_t k = config_.moe.num_experts_per_tok, sparse = sparse_index_[layer];
    for (int64_t t = 0; t < tokens; ++t) {
      const TokenOwner& owner = owners_[static_cast<size_t>(first + t)];
      std::vector<int32_t>& experts = rollouts_[static_cast<size_t>(owner.request)].experts;
      const auto begin = static_cast<size_t>((owner.position * sparse_layers_ + sparse) * k);
      if (experts.size() < begin + static_cast<size_t>(k))
        experts.resize(static_cast<size_t>((owner.position + 1) * sparse_layers_ * k));
      std::copy(chosen + t * k, chosen + (t + 1) * k, experts.begin() + static_cast<std::ptrdiff_t>(begin));
    }
  }

  void append_sampled(const SampledLayout& layout) {
    const int32_t* tokens = sampled_.host<int32_t>(layout.tokens);
    const float* logprobs = sampled_.host<float>(layout.logprobs);
    for (size_t i = 0; i < running_.size(); ++i) {
      Sequence& sequence = running_[i];
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
  std::vector<TokenOwner> owners_;     // [batch tokens]
  std::vector<int64_t> sparse_index_;  // [layers] a layer's index among the sparse layers, or -1
  int64_t sparse_layers_ = 0;
  PackedBuffer sampled_;  // [running] tokens and log-probs of the current step (SampledLayout)
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
