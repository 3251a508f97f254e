// Whole policies on the CUDA backend against the CPU backend, through the C
// API only: teacher-forced log-probs, one training step's loss and gradient
// norm, the rollout/training consistency on the GPU, and a short RL run.
//
// The CPU backend defines the numbers. The element-wise, norm, attention and
// sampling kernels share kernels/common with it, but the GEMMs cannot: the
// CPU accumulates K in its own order, cuBLASLt in another, so values differ
// by FP32 rounding (BF16 recipe) or by an occasional E4M3 code of an
// activation that lands on the other side of a rounding boundary (FP8). The
// tolerances below bound that; exactness is only claimed within one backend.
#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi/capi_policy_fixture.h"

namespace {

#define REQUIRE_OK(call) REQUIRE_MESSAGE((call) == FP8RL_OK, #call, ": ", fp8rl_last_error_message())

struct ContextDestroy {
  void operator()(fp8rl_context* c) const { (void)fp8rl_context_destroy(c); }
};
struct PolicyDestroy {
  void operator()(fp8rl_policy* p) const { (void)fp8rl_policy_destroy(p); }
};
struct TrainerDestroy {
  void operator()(fp8rl_trainer* t) const { (void)fp8rl_trainer_destroy(t); }
};
struct RolloutDestroy {
  void operator()(fp8rl_rollout* r) const { (void)fp8rl_rollout_destroy(r); }
};

enum class RecipeKind { bf16, fp8_full };

fp8rl_recipe make_recipe(RecipeKind kind) {
  fp8rl_recipe recipe;
  REQUIRE_OK(fp8rl_recipe_init(&recipe));
  if (kind == RecipeKind::fp8_full) recipe.linear = recipe.kv_cache = recipe.attention = FP8RL_PRECISION_FP8;
  return recipe;
}

// One backend's context, a random policy (the same weights on every backend
// for the same seed) and, on demand, a trainer. Members die in reverse order.
struct Session {
  std::unique_ptr<fp8rl_context, ContextDestroy> context;
  std::unique_ptr<fp8rl_policy, PolicyDestroy> policy;
  std::unique_ptr<fp8rl_trainer, TrainerDestroy> trainer;

  Session(fp8rl_backend backend, RecipeKind recipe, const fp8rl_model_config& config = capi_test::llama_config(),
          uint64_t seed = 7) {
    fp8rl_context_options options;
    REQUIRE_OK(fp8rl_context_options_init(&options));
    options.backend = backend;
    fp8rl_context* c = nullptr;
    REQUIRE_OK(fp8rl_context_create(&options, &c));
    context.reset(c);
    fp8rl_policy* p = nullptr;
    REQUIRE_OK(fp8rl_policy_create_random(c, &config, seed, &p));
    policy.reset(p);
    const fp8rl_recipe r = make_recipe(recipe);
    REQUIRE_OK(fp8rl_policy_set_recipe(p, &r));
  }

  void start_training(int32_t group_size, double learning_rate) {
    fp8rl_trainer_options options;
    REQUIRE_OK(fp8rl_trainer_options_init(&options));
    options.group_size = group_size;
    options.learning_rate = learning_rate;
    options.importance.mode = FP8RL_IMPORTANCE_TRUNCATED;
    options.seed = 3;
    fp8rl_trainer* t = nullptr;
    REQUIRE_OK(fp8rl_trainer_create(policy.get(), &options, &t));
    trainer.reset(t);
  }
};

// Sequences of prompt + completion tokens, flat, as the C API takes them.
struct Sequences {
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> prompt_lengths;
  int64_t count() const { return static_cast<int64_t>(prompt_lengths.size()); }
  int64_t completion_tokens() const { return static_cast<int64_t>(tokens.size()) - sum_prompts(); }
  int64_t sum_prompts() const {
    int64_t n = 0;
    for (int64_t p : prompt_lengths) n += p;
    return n;
  }
};

// count sequences of `length` tokens whose first `prompt` tokens are the prompt.
Sequences random_sequences(int64_t count, int64_t prompt, int64_t length, int32_t vocab) {
  Sequences s;
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<int32_t> seq = capi_test::make_prompt(length, static_cast<uint32_t>(i + 1), vocab);
    s.tokens.insert(s.tokens.end(), seq.begin(), seq.end());
    s.offsets.push_back(static_cast<int64_t>(s.tokens.size()));
    s.prompt_lengths.push_back(prompt);
  }
  return s;
}

std::vector<float> score(const Session& session, const Sequences& s) {
  fp8rl_sampling_options sampling;
  REQUIRE_OK(fp8rl_sampling_options_init(&sampling));
  std::vector<float> logprobs(static_cast<size_t>(s.completion_tokens()));
  REQUIRE_OK(fp8rl_policy_score(session.policy.get(), s.tokens.data(), s.offsets.data(), s.count(),
                                s.prompt_lengths.data(), &sampling, logprobs.data(),
                                static_cast<int64_t>(logprobs.size())));
  return logprobs;
}

struct Difference {
  double max_abs = 0.0;
  double mean_abs = 0.0;
};

Difference difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  Difference d;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    d.max_abs = e > d.max_abs ? e : d.max_abs;
    d.mean_abs += e / static_cast<double>(a.size());
  }
  return d;
}

const char* name(RecipeKind kind) { return kind == RecipeKind::bf16 ? "bf16" : "fp8 (linear, KV cache, attention)"; }

// Tolerances on teacher-forced log-probs, CUDA vs CPU (see the file comment).
struct Tolerance {
  double max_abs;
  double mean_abs;
};
Tolerance logprob_tolerance(RecipeKind kind) {
  return kind == RecipeKind::bf16 ? Tolerance{2e-3, 2e-4} : Tolerance{0.1, 5e-3};
}

// A generated batch on one session: sequences, the rollout's log-probs, and
// the rewards of examples/rl_loop.c (the fraction of completion tokens equal to 7).
struct Batch {
  Sequences sequences;
  std::vector<float> logp_gen;
  std::vector<float> rewards;
  double reward_mean = 0.0;
};

Batch generate_batch(Session& session, const std::vector<std::vector<int32_t>>& prompts, int32_t new_tokens) {
  std::vector<int32_t> flat;
  std::vector<int64_t> offsets{0};
  for (const auto& p : prompts) {
    flat.insert(flat.end(), p.begin(), p.end());
    offsets.push_back(static_cast<int64_t>(flat.size()));
  }
  std::vector<uint64_t> seeds(prompts.size());
  REQUIRE_OK(fp8rl_trainer_next_seeds(session.trainer.get(), static_cast<int64_t>(seeds.size()), seeds.data()));
  fp8rl_sampling_options sampling;
  REQUIRE_OK(fp8rl_sampling_options_init(&sampling));
  sampling.max_new_tokens = new_tokens;
  sampling.stop_at_eos = 0;
  fp8rl_rollout* raw = nullptr;
  REQUIRE_OK(fp8rl_policy_generate(session.policy.get(), flat.data(), offsets.data(),
                                   static_cast<int64_t>(prompts.size()), seeds.data(), &sampling, &raw));
  const std::unique_ptr<fp8rl_rollout, RolloutDestroy> rollout(raw);
  Batch b;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int32_t* tokens = nullptr;
    const float* logprobs = nullptr;
    int64_t length = 0;
    REQUIRE_OK(fp8rl_rollout_get(raw, static_cast<int64_t>(i), &tokens, &logprobs, &length, nullptr));
    b.sequences.tokens.insert(b.sequences.tokens.end(), prompts[i].begin(), prompts[i].end());
    b.sequences.tokens.insert(b.sequences.tokens.end(), tokens, tokens + length);
    b.sequences.offsets.push_back(static_cast<int64_t>(b.sequences.tokens.size()));
    b.sequences.prompt_lengths.push_back(static_cast<int64_t>(prompts[i].size()));
    b.logp_gen.insert(b.logp_gen.end(), logprobs, logprobs + length);
    int64_t hits = 0;
    for (int64_t j = 0; j < length; ++j) hits += tokens[j] == 7;
    b.rewards.push_back(length > 0 ? static_cast<float>(hits) / static_cast<float>(length) : 0.0f);
    b.reward_mean += b.rewards.back() / static_cast<double>(prompts.size());
  }
  return b;
}

fp8rl_train_metrics train(Session& session, const Batch& b) {
  fp8rl_train_batch batch;
  REQUIRE_OK(fp8rl_train_batch_init(&batch));
  batch.tokens = b.sequences.tokens.data();
  batch.offsets = b.sequences.offsets.data();
  batch.num_sequences = b.sequences.count();
  batch.prompt_lengths = b.sequences.prompt_lengths.data();
  batch.num_completion_tokens = b.sequences.completion_tokens();
  batch.logp_gen = b.logp_gen.data();
  batch.rewards = b.rewards.data();
  fp8rl_train_metrics metrics;
  REQUIRE_OK(fp8rl_train_metrics_init(&metrics));
  REQUIRE_OK(fp8rl_trainer_step(session.trainer.get(), &batch, &metrics));
  return metrics;
}

// Step `step`'s prompts of examples/rl_loop.c: 4 prompts x a group of 4.
std::vector<std::vector<int32_t>> rl_prompts(int step) {
  std::vector<std::vector<int32_t>> prompts(16);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 4; ++j) prompts[i].push_back(8 + (step * 5 + (i / 4) * 3 + j) % 24);
  return prompts;
}

}  // namespace

TEST_CASE("cuda policy: teacher-forced log-probs match the CPU backend within the GEMM tolerance") {
  for (const RecipeKind kind : {RecipeKind::bf16, RecipeKind::fp8_full}) {
    const Session cpu(FP8RL_BACKEND_CPU, kind), gpu(FP8RL_BACKEND_CUDA, kind);
    const Sequences s = random_sequences(8, 6, 40, static_cast<int32_t>(capi_test::llama_config().vocab_size));
    const Difference d = difference(score(cpu, s), score(gpu, s));
    const Tolerance t = logprob_tolerance(kind);
    INFO(name(kind), ": max |diff| ", d.max_abs, ", mean |diff| ", d.mean_abs);
    CHECK(d.max_abs <= t.max_abs);
    CHECK(d.mean_abs <= t.mean_abs);
  }
}

TEST_CASE("cuda policy: training log-probs equal rollout log-probs bit for bit on the GPU") {
  for (const RecipeKind kind : {RecipeKind::bf16, RecipeKind::fp8_full}) {
    Session gpu(FP8RL_BACKEND_CUDA, kind);
    gpu.start_training(4, 1e-3);
    const Batch b = generate_batch(gpu, rl_prompts(0), 12);
    std::vector<float> recomputed(b.logp_gen.size());
    REQUIRE_OK(fp8rl_trainer_recompute_logprobs(
        gpu.trainer.get(), b.sequences.tokens.data(), b.sequences.offsets.data(), b.sequences.count(),
        b.sequences.prompt_lengths.data(), recomputed.data(), static_cast<int64_t>(recomputed.size())));
    int64_t different = 0;
    for (size_t i = 0; i < recomputed.size(); ++i)
      different += std::memcmp(&recomputed[i], &b.logp_gen[i], sizeof(float)) != 0;
    const fp8rl_train_metrics m = train(gpu, b);
    INFO(name(kind), ": ", different, " of ", recomputed.size(), " log-probs differ; token_mult_prob_error ",
         m.token_mult_prob_error);
    CHECK(different == 0);
    CHECK(m.token_mult_prob_error == 1.0);
  }
}

TEST_CASE("cuda policy: one training step's loss and gradient norm match the CPU backend") {
  for (const RecipeKind kind : {RecipeKind::bf16, RecipeKind::fp8_full}) {
    Session cpu(FP8RL_BACKEND_CPU, kind), gpu(FP8RL_BACKEND_CUDA, kind);
    cpu.start_training(4, 1e-3);
    gpu.start_training(4, 1e-3);
    // The CPU's batch on both: the same tokens, rewards and generator log-probs.
    const Batch b = generate_batch(cpu, rl_prompts(1), 12);
    (void)generate_batch(gpu, rl_prompts(1), 12);  // keeps the two seed streams in step
    const fp8rl_train_metrics on_cpu = train(cpu, b), on_gpu = train(gpu, b);
    INFO(name(kind), ": loss ", on_cpu.loss, " vs ", on_gpu.loss, ", grad norm ", on_cpu.grad_norm, " vs ",
         on_gpu.grad_norm);
    CHECK(std::fabs(on_gpu.grad_norm - on_cpu.grad_norm) <= 2e-2 * on_cpu.grad_norm);
    CHECK(std::fabs(on_gpu.loss - on_cpu.loss) <= 2e-2 * std::fabs(on_cpu.loss) + 1e-4);
    CHECK(std::fabs(on_gpu.entropy - on_cpu.entropy) <= 1e-2 * on_cpu.entropy);
  }
}

TEST_CASE("cuda policy: a short RL run learns like the CPU run") {
  // examples/rl_loop.c's task: 20 GRPO steps, reward = fraction of 7s.
  double first[2] = {0, 0}, last[2] = {0, 0}, mismatch[2] = {0, 0};
  const fp8rl_backend backends[2] = {FP8RL_BACKEND_CPU, FP8RL_BACKEND_CUDA};
  for (int b = 0; b < 2; ++b) {
    Session session(backends[b], RecipeKind::fp8_full, capi_test::rl_loop_config(), 1);
    session.start_training(4, 1e-2);
    for (int step = 0; step < 20; ++step) {
      const Batch batch = generate_batch(session, rl_prompts(step), 6);
      const fp8rl_train_metrics m = train(session, batch);
      if (step < 3) first[b] += batch.reward_mean / 3;
      if (step >= 17) last[b] += batch.reward_mean / 3;
      mismatch[b] = m.token_mult_prob_error;
    }
  }
  INFO("mean reward of the first/last 3 steps: CPU ", first[0], " -> ", last[0], ", CUDA ", first[1], " -> ", last[1],
       "; token_mult_prob_error CPU ", mismatch[0], ", CUDA ", mismatch[1]);
  CHECK(last[1] > first[1] + 0.3);
  CHECK(std::fabs(last[1] - last[0]) <= 0.25);  // noise: two backends' trajectories diverge once a token differs
  CHECK(mismatch[1] == 1.0);
}
