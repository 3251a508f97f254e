// Host<->device synchronizations of the rollout engine, counted on a backend
// that wraps the CPU one (tests/support/counting_backend.h). A forward pass
// costs one upload (its packed indices and sampling rows); a step costs one
// download (its sampled tokens and log-probs), however many passes prefill
// chunking makes of it; scoring, one upload per pass and one download per
// group of sequences. The counting changes no result: rollouts and scores
// are bitwise those of the plain CPU backend.
#include <doctest/doctest.h>

#include <deque>

#include "policy_test_support.h"
#include "support/counting_backend.h"

namespace fp8rl::test {
namespace {

// Every transfer and every forward pass (one embedding() call each), in call order.
class TracingBackend final : public CountingBackend {
 public:
  enum class Event { upload, download, pass };
  std::vector<Event> trace;

  void upload(void* dst, const void* src, size_t bytes) override {
    trace.push_back(Event::upload);
    CountingBackend::upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    trace.push_back(Event::download);
    CountingBackend::download(dst, src, bytes);
  }
  void embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                 float* out) override {
    trace.push_back(Event::pass);
    pass_tokens.push_back(count);
    CountingBackend::embedding(table, vocab, hidden, ids, count, out);
  }
  std::vector<int64_t> pass_tokens;  // [passes]
};

struct StepTransfers {
  int64_t uploads = 0, downloads = 0, passes = 0, tokens = 0;
};

// Cuts the trace into steps: a step ends with its downloads, so a new one
// starts at the first upload after a download.
std::vector<StepTransfers> steps_of(const TracingBackend& backend) {
  std::vector<StepTransfers> steps(1);
  size_t pass = 0;
  bool downloaded = false;
  for (TracingBackend::Event event : backend.trace) {
    if (event == TracingBackend::Event::upload && downloaded) {
      steps.emplace_back();
      downloaded = false;
    }
    StepTransfers& step = steps.back();
    if (event == TracingBackend::Event::upload) ++step.uploads;
    if (event == TracingBackend::Event::download) ++step.downloads, downloaded = true;
    if (event == TracingBackend::Event::pass) ++step.passes, step.tokens += backend.pass_tokens[pass++];
  }
  return steps;
}

// What each step feeds, by the engine's documented schedule (not by
// its code): waiting prompts enter free slots in order; a step feeds the
// whole prompt of each new sequence and one token of each other; a sequence
// leaves after its last completion token. Independent of the trace, so a
// step that skipped its download would not go unnoticed.
struct ScheduledStep {
  int64_t tokens = 0;
  bool prefill = false;  // it feeds the prompt of a newly admitted sequence
  int64_t decodes = 0;   // sequences it feeds one token
};

std::vector<ScheduledStep> schedule(const FlatSequences& prompts, const std::vector<rollout::Rollout>& rollouts,
                                    int64_t slots) {
  struct Running {
    size_t request;
    size_t generated;
  };
  std::deque<size_t> waiting;
  for (size_t r = 0; r < rollouts.size(); ++r) waiting.push_back(r);
  std::vector<Running> running;
  std::vector<ScheduledStep> steps;
  while (!waiting.empty() || !running.empty()) {
    while (!waiting.empty() && static_cast<int64_t>(running.size()) < slots) {
      running.push_back({waiting.front(), 0});
      waiting.pop_front();
    }
    ScheduledStep step;
    std::vector<Running> still_running;
    for (Running& s : running) {
      step.prefill |= s.generated == 0;
      step.decodes += s.generated == 0 ? 0 : 1;
      step.tokens += s.generated == 0 ? prompts.view().length(static_cast<int64_t>(s.request)) : 1;
      if (++s.generated < rollouts[s.request].tokens.size()) still_running.push_back(s);
    }
    running = std::move(still_running);
    steps.push_back(step);
  }
  return steps;
}

bool same_rollouts(const std::vector<rollout::Rollout>& a, const std::vector<rollout::Rollout>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].tokens != b[i].tokens || a[i].finish != b[i].finish) return false;
    if (a[i].logprobs.size() != b[i].logprobs.size()) return false;
    for (size_t t = 0; t < a[i].logprobs.size(); ++t)
      if (!same_bits(a[i].logprobs[t], b[i].logprobs[t])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a decode step makes one upload and one download, a prefill step one upload per pass") {
  auto owned = std::make_unique<TracingBackend>();
  TracingBackend& counted = *owned;
  Context counting(std::move(owned), Logger(), 2);
  Context plain(cpu_request(2), Logger());
  const model::ModelConfig config = tiny_llama();  // max_position_embeddings 96
  // The 90-token prompt fills its context after 7 tokens, so its slot frees
  // while the others decode and a waiting prompt is admitted mid-run.
  const FlatSequences prompts = test_prompts({7, 30, 90, 4, 12, 3}, config.vocab_size, 3);
  const std::vector<uint64_t> seeds = {1, 2, 3, 4, 5, 6};
  rollout::SamplingOptions options;
  options.max_new_tokens = 9;
  options.batch_slots = 3;
  options.max_tokens_per_step = 16;  // prefill in chunks
  options.stop_at_eos = false;       // completion lengths, hence the schedule, fixed by the options
  options.top_k = 40;
  options.temperature = 0.8f;
  for (const NamedRecipe& recipe : all_recipes()) {
    CAPTURE(std::string(recipe.name));
    policy::Policy on_counted(counting, tiny_params(config), recipe.recipe);
    policy::Policy on_plain(plain, tiny_params(config), recipe.recipe);
    counted.trace.clear();
    counted.pass_tokens.clear();
    const auto rollouts = rollout::generate(on_counted, prompts.view(), seeds, options);
    CHECK(same_rollouts(rollouts, rollout::generate(on_plain, prompts.view(), seeds, options)));

    const std::vector<StepTransfers> steps = steps_of(counted);
    const std::vector<ScheduledStep> scheduled = schedule(prompts, rollouts, options.batch_slots);
    REQUIRE(steps.size() == scheduled.size());
    int64_t decode_steps = 0, mixed_steps = 0;
    for (size_t s = 0; s < steps.size(); ++s) {
      CAPTURE(s);
      const StepTransfers& step = steps[s];
      CHECK(step.tokens == scheduled[s].tokens);
      if (!scheduled[s].prefill) {
        ++decode_steps;
        CHECK(step.passes == 1);
        CHECK(step.uploads == 1);
        CHECK(step.downloads == 1);
        continue;
      }
      mixed_steps += scheduled[s].decodes > 0;  // admission while others decode
      // A prefill step: one pass per max_tokens_per_step tokens (it wants at
      // most 3 logit rows, far below the row limit), one upload per pass, and
      // the first step also the runner's RoPE tables (cos, sin), built once.
      CHECK(step.passes == (step.tokens + options.max_tokens_per_step - 1) / options.max_tokens_per_step);
      CHECK(step.uploads == step.passes + (s == 0 ? 2 : 0));
      CHECK(step.downloads == 1);
    }
    CHECK(decode_steps > 0);
    CHECK(mixed_steps > 0);
  }
}

TEST_CASE("scoring makes one upload per pass and one download per group") {
  auto owned = std::make_unique<TracingBackend>();
  TracingBackend& counted = *owned;
  Context counting(std::move(owned), Logger(), 2);
  Context plain(cpu_request(2), Logger());
  const model::ModelConfig config = tiny_qwen3();
  const FlatSequences sequences = test_prompts({20, 45, 9, 33}, config.vocab_size, 4);
  const std::vector<int64_t> prompt_lengths = {5, 30, 1, 12};  // one group: far below its token limit
  rollout::SamplingOptions options;
  options.max_tokens_per_step = 16;
  options.temperature = 0.7f;
  options.top_p = 0.9f;
  policy::Policy on_counted(counting, tiny_params(config));
  policy::Policy on_plain(plain, tiny_params(config));
  counted.trace.clear();
  counted.pass_tokens.clear();
  const std::vector<float> scored = rollout::score_completions(on_counted, sequences.view(), prompt_lengths, options);
  const std::vector<float> reference = rollout::score_completions(on_plain, sequences.view(), prompt_lengths, options);
  REQUIRE(scored.size() == reference.size());
  for (size_t i = 0; i < scored.size(); ++i) CHECK(same_bits(scored[i], reference[i]));

  const std::vector<StepTransfers> steps = steps_of(counted);
  REQUIRE(steps.size() == 1);
  // Every token but each sequence's last is fed: 103 tokens, 7 passes of at most 16.
  CHECK(steps[0].tokens == 103);
  CHECK(steps[0].passes == 7);
  CHECK(steps[0].uploads == 7 + 2);  // and the RoPE tables, on this fresh policy
  CHECK(steps[0].downloads == 1);
}

}  // namespace fp8rl::test
