// Mixture-of-Experts throughput on the CPU backend, each figure against its
// baseline measured in the same run:
//
//  1. One Qwen3-30B-A3B layer (hidden 2048, 32/4 heads of 128, 128 experts
//     of width 768, top-8, renormalized) as a one-layer policy with a 2048-
//     token vocabulary, forward tokens/s over one sequence of 1, 32 and 2048
//     tokens, BF16 and FP8 linears. Baseline: the same layer with a dense
//     SwiGLU MLP of width 8 x 768 = 6144, the same active FLOPs.
//  2. The same layers' training forward and backward (one TrainingPass,
//     every fed token's log-prob back-propagated into a gradient arena that
//     is not zeroed or read between runs: the pass itself, without the
//     optimizer, whose cost grows with all experts' weights, not the active
//     ones), tokens/s: MoE against dense, and FP8 against BF16.
//  3. Decode tokens/s of a small MoE policy (16 experts of width 256, top-2)
//     against a dense policy of equal active parameters (width 512).
//
//   fp8rl_bench_moe [--threads N] [--repeats N]
//
// Attention, norms and the small head are in both sides of each ratio; the
// MoE-over-dense ratio is what routing, grouping, the per-expert GEMMs and
// the combine cost. Medians of --repeats runs after one warm-up.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.h"
#include "core/context.h"
#include "core/model/model_params.h"
#include "core/policy/policy.h"
#include "core/rollout/rollout.h"
#include "core/train/param_arena.h"
#include "core/train/training_pass.h"
#include "core/train/transposed_model.h"

namespace {

using fp8rl::bench::Clock;
using fp8rl::bench::median;
using fp8rl::bench::seconds_since;

using namespace fp8rl;

struct Options {
  int threads = 0;
  int repeats = 3;
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--threads" || arg == "--repeats") && i + 1 < argc) {
      (arg == "--threads" ? options.threads : options.repeats) = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: fp8rl_bench_moe [--threads N] [--repeats N]\n");
      std::exit(2);
    }
  }
  if (options.threads <= 0) options.threads = static_cast<int>(std::thread::hardware_concurrency());
  if (options.repeats < 1) options.repeats = 1;
  return options;
}

// One Qwen3-30B-A3B layer; dense: its MLP replaced by the dense SwiGLU of
// the same active width.
model::ModelConfig qwen3_30b_a3b_layer(bool dense) {
  model::ModelConfig c;
  c.family = dense ? model::ModelFamily::qwen3 : model::ModelFamily::qwen3_moe;
  c.vocab_size = 2048;
  c.hidden_size = 2048;
  c.num_layers = 1;
  c.num_attention_heads = 32;
  c.num_key_value_heads = 4;
  c.head_dim = 128;
  c.head_dim_explicit = true;
  c.qk_norm = true;
  c.intermediate_size = 8 * 768;
  c.max_position_embeddings = 4096;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1e6;
  if (!dense) {
    c.moe.num_experts = 128;
    c.moe.num_experts_per_tok = 8;
    c.moe.moe_intermediate_size = 768;
    c.moe.norm_topk_prob = true;
  }
  return c;
}

model::ModelConfig small_policy(bool dense) {
  model::ModelConfig c = qwen3_30b_a3b_layer(dense);
  c.vocab_size = 4096;
  c.hidden_size = 512;
  c.num_layers = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.intermediate_size = 2 * 256;
  if (!dense) {
    c.moe.num_experts = 16;
    c.moe.num_experts_per_tok = 2;
    c.moe.moe_intermediate_size = 256;
  }
  return c;
}

policy::Recipe recipe_of(bool fp8) {
  policy::Recipe recipe;
  if (fp8) recipe.linear = policy::Precision::fp8;
  return recipe;
}

std::vector<int32_t> tokens_of(int64_t count, int64_t vocab) {
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < count; ++i) tokens.push_back(static_cast<int32_t>((i * 7919 + 13) % vocab));
  return tokens;
}

// Forward tokens/s of full_logits over one sequence of `tokens` tokens.
double forward_rate(policy::Policy& policy, int64_t tokens, int repeats) {
  const std::vector<int32_t> sequence = tokens_of(tokens, policy.config().vocab_size);
  const int64_t offsets[] = {0, tokens};
  const rollout::TokenSequences view{sequence.data(), offsets, 1};
  std::vector<double> times;
  for (int r = 0; r <= repeats; ++r) {
    const Clock::time_point start = Clock::now();
    const std::vector<float> logits = rollout::full_logits(policy, view);
    if (r > 0) times.push_back(seconds_since(start));  // the first run warms up
    if (logits.empty()) std::abort();
  }
  return static_cast<double>(tokens) / median(times);
}

// Training forward + backward tokens/s: one sequence of tokens + 1 ids whose
// first is the prompt, so that every fed token's log-prob is in the loss.
double training_rate(policy::Policy& policy, train::ParamArena& grads, int64_t tokens, int repeats) {
  const std::vector<int32_t> sequence = tokens_of(tokens + 1, policy.config().vocab_size);
  const int64_t offsets[] = {0, tokens + 1};
  const rollout::TokenSequences view{sequence.data(), offsets, 1};
  const train::TransposedModel transposed(policy.context().backend(), policy.compiled());
  train::TrainingPass pass(policy);
  const std::vector<float> grad_logp(static_cast<size_t>(tokens), -1.0f / static_cast<float>(tokens));
  std::vector<float> entropy(static_cast<size_t>(tokens));
  std::vector<double> times;
  for (int r = 0; r <= repeats; ++r) {
    const Clock::time_point start = Clock::now();
    pass.forward(view, {1}, 0, 1, 1.0f);
    pass.backward(grad_logp.data(), transposed, grads, entropy.data());
    if (r > 0) times.push_back(seconds_since(start));
  }
  return static_cast<double>(tokens) / median(times);
}

// Decode tokens/s of generate(): 8 prompts of 16 tokens, 32 new tokens each,
// timed without the prefill (measured apart and subtracted).
double decode_rate(policy::Policy& policy, int repeats) {
  const int64_t batch = 8, prompt = 16, new_tokens = 32;
  std::vector<int32_t> tokens = tokens_of(batch * prompt, policy.config().vocab_size);
  std::vector<int64_t> offsets;
  for (int64_t i = 0; i <= batch; ++i) offsets.push_back(i * prompt);
  const rollout::TokenSequences view{tokens.data(), offsets.data(), batch};
  const std::vector<uint64_t> seeds(static_cast<size_t>(batch), 7);
  rollout::SamplingOptions options;
  options.temperature = 0.0f;
  const auto timed = [&](int64_t steps) {
    options.max_new_tokens = static_cast<int32_t>(steps);
    std::vector<double> times;
    for (int r = 0; r <= repeats; ++r) {
      const Clock::time_point start = Clock::now();
      rollout::generate(policy, view, seeds, options);
      if (r > 0) times.push_back(seconds_since(start));
    }
    return median(times);
  };
  const double prefill_only = timed(1), whole = timed(new_tokens);
  return static_cast<double>(batch * (new_tokens - 1)) / (whole - prefill_only);
}

void print_forward_table(Context& context, const Options& options) {
  std::printf("\nQwen3-30B-A3B layer forward, tokens/s (MoE: 128 experts x 768, top-8; dense: SwiGLU 6144)\n");
  std::printf("%-7s %7s %12s %12s %10s\n", "recipe", "tokens", "moe", "dense", "moe/dense");
  for (const bool fp8 : {false, true}) {
    policy::Policy moe(context, model::random_model_params(qwen3_30b_a3b_layer(false), 1), recipe_of(fp8));
    policy::Policy dense(context, model::random_model_params(qwen3_30b_a3b_layer(true), 1), recipe_of(fp8));
    for (const int64_t tokens : {int64_t{1}, int64_t{32}, int64_t{2048}}) {
      const double a = forward_rate(moe, tokens, options.repeats), b = forward_rate(dense, tokens, options.repeats);
      std::printf("%-7s %7lld %12.1f %12.1f %10.3f\n", fp8 ? "fp8" : "bf16", static_cast<long long>(tokens), a, b,
                  a / b);
      std::fflush(stdout);
    }
  }
}

void print_training_table(Context& context, const Options& options) {
  std::printf("\nQwen3-30B-A3B layer training forward + backward, tokens/s (the layers of the table above)\n");
  std::printf("%-7s %7s %12s %12s %10s %10s\n", "recipe", "tokens", "moe", "dense", "moe/dense", "fp8/bf16");
  std::vector<double> bf16_moe;
  for (const bool fp8 : {false, true}) {
    policy::Policy moe(context, model::random_model_params(qwen3_30b_a3b_layer(false), 1), recipe_of(fp8));
    policy::Policy dense(context, model::random_model_params(qwen3_30b_a3b_layer(true), 1), recipe_of(fp8));
    train::ParamArena moe_grads(context.backend(), moe.host_tensors());
    train::ParamArena dense_grads(context.backend(), dense.host_tensors());
    size_t row = 0;
    for (const int64_t tokens : {int64_t{1}, int64_t{32}, int64_t{2048}}) {
      const double a = training_rate(moe, moe_grads, tokens, options.repeats);
      const double b = training_rate(dense, dense_grads, tokens, options.repeats);
      if (!fp8) bf16_moe.push_back(a);
      std::printf("%-7s %7lld %12.1f %12.1f %10.3f %10.3f\n", fp8 ? "fp8" : "bf16", static_cast<long long>(tokens), a,
                  b, a / b, a / bf16_moe[row++]);
      std::fflush(stdout);
    }
  }
}

void print_decode_table(Context& context, const Options& options) {
  std::printf("\nsmall policy decode, tokens/s (4 layers, hidden 512; MoE 16 x 256 top-2, dense 512)\n");
  std::printf("%-7s %12s %12s %10s\n", "recipe", "moe", "dense", "moe/dense");
  for (const bool fp8 : {false, true}) {
    policy::Policy moe(context, model::random_model_params(small_policy(false), 2), recipe_of(fp8));
    policy::Policy dense(context, model::random_model_params(small_policy(true), 2), recipe_of(fp8));
    const double a = decode_rate(moe, options.repeats), b = decode_rate(dense, options.repeats);
    std::printf("%-7s %12.1f %12.1f %10.3f\n", fp8 ? "fp8" : "bf16", a, b, a / b);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  Context context(BackendRequest{BackendChoice::cpu, options.threads, 0}, Logger());
  std::printf("fp8rl_bench_moe: CPU backend, %d threads, medians of %d runs\n", options.threads, options.repeats);
  print_decode_table(context, options);
  print_forward_table(context, options);
  print_training_table(context, options);
  return 0;
}
