// sample, token_logprobs and log_softmax_backward of the CUDA backend
// (kernels/cuda/sampling_kernels.cu) against the CPU backend. Tokens must be
// equal and log-probs, dlogits and entropies bit for bit: both backends sum
// each row's double weights in the same order and sort by the same total
// order (sampling_math.h). The one thing not shared is libm: CUDA's double
// exp / log against glibc's, both within 1 ulp; a last-bit difference could
// in principle move a float rounding (odds ~2^-28 per value), so a failure
// here that shows a 1-ulp log-prob difference points there first.
//
// Every call mixes greedy, temperature-only, top-k, top-p and top-k + top-p
// rows, over vocab sizes 1, 7, 1000 and 32000, with random logits, logits with
// many exact ties, a constant row, -Inf logits and +-0 maxima.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/gpu_test_support.h"

namespace fp8rl::test {
namespace {

// Vocabulary sizes: one token, a partial warp, one staging round of the
// ordered sums (kStage = 2048 terms) and many. Under compute-sanitizer
// (FP8RL_GPU_TEST_SANITIZER set, by ./run gpu-check) racecheck tracks every
// shared-memory access and 32000 takes minutes; 4500 still crosses two round
// boundaries and ends in a partial round.
std::vector<int64_t> vocab_sizes() {
  if (std::getenv("FP8RL_GPU_TEST_SANITIZER") != nullptr) return {1, 7, 1000, 4500};
  return {1, 7, 1000, 32000};
}

struct Config {
  float temperature;
  int32_t top_k;
  float top_p;
};

// Greedy, temperature only, top-k (active or not), top-p, both.
std::vector<Config> configs(int64_t vocab) {
  const int32_t v = static_cast<int32_t>(vocab);
  return {
      {0.0f, 0, 1.0f},  {0.0f, 5, 0.5f},    {1.0f, 0, 1.0f},  {0.7f, 0, 1.0f},  {1.3f, 0, 1.0f},
      {1.0f, 1, 1.0f},  {0.8f, 5, 1.0f},    {1.0f, 50, 1.0f}, {1.0f, v, 1.0f},  {1.0f, v - 1, 1.0f},
      {1.0f, 0, 0.9f},  {0.6f, 0, 0.5f},    {1.2f, 0, 0.95f}, {1.0f, 0, 1e-6f}, {1.0f, 20, 0.8f},
      {0.9f, 3, 0.99f}, {2.0f, 1000, 0.7f}, {0.05f, 0, 0.9f}, {1e-3f, 7, 1.0f}, {5.0f, 0, 0.999f},
  };
}

// Each config twice per uniform in {random, 0, just below 1}.
std::vector<SamplingRow> make_params(int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<SamplingRow> params;
  for (const Config& c : configs(vocab))
    for (const double u : {uniform(rng), uniform(rng), 0.0, 0.9999999999}) {
      SamplingRow p;
      p.temperature = c.temperature;
      p.top_k = c.top_k;
      p.top_p = c.top_p;
      p.uniform = u;
      params.push_back(p);
    }
  return params;
}

enum class Logits { random, ties, special };

// rows x vocab logits: normal values; with ties, multiples of 0.5 in [-3, 3];
// special: the tie rows with a constant row, -Inf logits and rows whose
// maximum is +-0 (with both signs present).
std::vector<float> make_logits(int64_t rows, int64_t vocab, Logits kind, uint32_t seed) {
  std::vector<float> x = random_matrix(rows, vocab, seed, 2);
  if (kind == Logits::random) return x;
  for (float& v : x) v = std::round(std::fmin(std::fmax(v, -3.0f), 3.0f) * 2.0f) * 0.5f;
  if (kind == Logits::ties) return x;
  std::mt19937 rng(seed + 1);
  std::uniform_int_distribution<int64_t> column(0, vocab - 1);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * vocab;
    switch (r % 4) {
      case 0:
        for (int64_t i = 0; i < vocab; ++i) row[i] = 0.25f;
        break;
      case 1:  // -Inf sprinkled (never the whole row)
        for (int64_t i = 1; i < vocab; i += 3) row[i] = -INFINITY;
        break;
      case 2:  // max is -0 / +0, first at a random column
        for (int64_t i = 0; i < vocab; ++i) row[i] = -std::fabs(row[i]) - 0.5f;
        for (int k = 0; k < 3; ++k) row[column(rng)] = k % 2 ? 0.0f : -0.0f;
        break;
      default:  // huge and tiny magnitudes
        row[column(rng)] = 3.0e38f;
        row[column(rng)] = -FLT_MAX;
        row[column(rng)] = 1e-40f;
        break;
    }
  }
  return x;
}

struct Draws {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
};

Draws sample_on(Backend& backend, const std::vector<float>& logits, int64_t vocab,
                const std::vector<SamplingRow>& params) {
  const int64_t rows = static_cast<int64_t>(params.size());
  const Buffer x = to_backend(backend, logits), p = to_backend(backend, params);
  const Buffer tokens(backend, static_cast<size_t>(rows) * sizeof(int32_t));
  const Buffer logprobs(backend, static_cast<size_t>(rows) * sizeof(float));
  backend.sample(x.as<float>(), rows, vocab, p.as<SamplingRow>(), tokens.as<int32_t>(), logprobs.as<float>());
  return {from_backend<int32_t>(backend, tokens, static_cast<size_t>(rows)),
          from_backend<float>(backend, logprobs, static_cast<size_t>(rows))};
}

std::vector<float> logprobs_on(Backend& backend, const std::vector<float>& logits, int64_t vocab,
                               const std::vector<SamplingRow>& params, const std::vector<int32_t>& targets) {
  const int64_t rows = static_cast<int64_t>(params.size());
  const Buffer x = to_backend(backend, logits), p = to_backend(backend, params), t = to_backend(backend, targets);
  const Buffer logprobs(backend, static_cast<size_t>(rows) * sizeof(float));
  backend.token_logprobs(x.as<float>(), rows, vocab, p.as<SamplingRow>(), t.as<int32_t>(), logprobs.as<float>());
  return from_backend<float>(backend, logprobs, static_cast<size_t>(rows));
}

const char* kind_name(Logits kind) {
  return kind == Logits::random ? "random" : kind == Logits::ties ? "ties" : "special";
}

TEST_CASE("cuda sample: the CPU backend's tokens and log-probs, bit for bit") {
  for (const int64_t vocab : vocab_sizes())
    for (const Logits kind : {Logits::random, Logits::ties, Logits::special}) {
      const std::vector<SamplingRow> params = make_params(vocab, static_cast<uint32_t>(vocab) + 3);
      const int64_t rows = static_cast<int64_t>(params.size());
      const std::vector<float> logits = make_logits(rows, vocab, kind, static_cast<uint32_t>(vocab) * 7 + 1);
      const std::string what = "vocab " + std::to_string(vocab) + ", " + kind_name(kind) + " logits";
      const Draws expected = sample_on(cpu(), logits, vocab, params);
      const Draws actual = sample_on(gpu(), logits, vocab, params);
      check_bitwise(expected.tokens, actual.tokens, what + ": tokens");
      check_bitwise(expected.logprobs, actual.logprobs, what + ": log-probs");
      // token_logprobs at the sampled tokens reproduces sample()'s log-probs on the GPU too.
      check_bitwise(actual.logprobs, logprobs_on(gpu(), logits, vocab, params, actual.tokens),
                    what + ": GPU token_logprobs at the sampled tokens");
    }
}

TEST_CASE("cuda token_logprobs: the CPU backend's, bit for bit, inside and outside the support") {
  for (const int64_t vocab : vocab_sizes())
    for (const Logits kind : {Logits::random, Logits::ties, Logits::special}) {
      const std::vector<SamplingRow> params = make_params(vocab, static_cast<uint32_t>(vocab) + 11);
      const int64_t rows = static_cast<int64_t>(params.size());
      const std::vector<float> logits = make_logits(rows, vocab, kind, static_cast<uint32_t>(vocab) * 5 + 2);
      const std::string what = "vocab " + std::to_string(vocab) + ", " + kind_name(kind) + " logits";
      // Targets: uniformly random (mostly outside a top-k / top-p support),
      // and the CPU's sampled tokens (inside it).
      std::mt19937 rng(17);
      std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab - 1));
      std::vector<int32_t> targets(static_cast<size_t>(rows));
      for (int32_t& t : targets) t = token(rng);
      check_bitwise(logprobs_on(cpu(), logits, vocab, params, targets),
                    logprobs_on(gpu(), logits, vocab, params, targets), what + ": random targets");
      const std::vector<int32_t> sampled = sample_on(cpu(), logits, vocab, params).tokens;
      check_bitwise(logprobs_on(cpu(), logits, vocab, params, sampled),
                    logprobs_on(gpu(), logits, vocab, params, sampled), what + ": sampled targets");
    }
}

TEST_CASE("cuda sample: many rows (several CTAs per SM) and rows == 0") {
  const int64_t vocab = 1000, rows = 700;
  std::vector<SamplingRow> params;
  const std::vector<SamplingRow> base = make_params(vocab, 5);
  for (int64_t r = 0; r < rows; ++r) params.push_back(base[static_cast<size_t>(r) % base.size()]);
  const std::vector<float> logits = make_logits(rows, vocab, Logits::ties, 9);
  const Draws expected = sample_on(cpu(), logits, vocab, params);
  const Draws actual = sample_on(gpu(), logits, vocab, params);
  check_bitwise(expected.tokens, actual.tokens, "700 rows: tokens");
  check_bitwise(expected.logprobs, actual.logprobs, "700 rows: log-probs");
  gpu().sample(nullptr, 0, vocab, nullptr, nullptr, nullptr);  // nothing to do, nothing looked at
  gpu().synchronize();
}

struct Backward {
  std::vector<float> dlogits;
  std::vector<float> entropy;
};

Backward backward_on(Backend& backend, const std::vector<float>& logits, int64_t vocab,
                     const std::vector<SamplingRow>& params, const std::vector<int32_t>& targets,
                     const std::vector<float>& coef, bool in_place) {
  const int64_t rows = static_cast<int64_t>(params.size());
  const Buffer x = to_backend(backend, logits), p = to_backend(backend, params), t = to_backend(backend, targets),
               c = to_backend(backend, coef);
  const Buffer separate(backend, logits.size() * sizeof(float));  // unused in place
  const Buffer entropy(backend, static_cast<size_t>(rows) * sizeof(float));
  float* dlogits = in_place ? x.as<float>() : separate.as<float>();
  backend.log_softmax_backward(x.as<float>(), rows, vocab, p.as<SamplingRow>(), t.as<int32_t>(), c.as<float>(), dlogits,
                               entropy.as<float>());
  std::vector<float> out(logits.size());
  backend.download(out.data(), dlogits, out.size() * sizeof(float));
  return {out, from_backend<float>(backend, entropy, static_cast<size_t>(rows))};
}

TEST_CASE("cuda log_softmax_backward: the CPU backend's dlogits and entropy, bit for bit") {
  for (const int64_t vocab : vocab_sizes())
    for (const Logits kind : {Logits::random, Logits::ties, Logits::special})
      for (const bool in_place : {false, true}) {
        std::vector<SamplingRow> params;
        for (const float temperature : {1.0f, 0.7f, 1.3f, 0.05f, 5.0f})
          for (const float top_p : {1.0f, 0.9f}) {  // top-k / top-p are ignored by the backward
            SamplingRow p;
            p.temperature = temperature;
            p.top_k = 3;
            p.top_p = top_p;
            params.push_back(p);
          }
        const int64_t rows = static_cast<int64_t>(params.size());
        const std::vector<float> logits = make_logits(rows, vocab, kind, static_cast<uint32_t>(vocab) + 23);
        std::mt19937 rng(29);
        std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab - 1));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<int32_t> targets(static_cast<size_t>(rows));
        std::vector<float> coef(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
          targets[static_cast<size_t>(r)] = token(rng);
          coef[static_cast<size_t>(r)] = r == 0 ? 0.0f : normal(rng);
        }
        const std::string what =
            "vocab " + std::to_string(vocab) + ", " + kind_name(kind) + " logits" + (in_place ? ", in place" : "");
        const Backward expected = backward_on(cpu(), logits, vocab, params, targets, coef, in_place);
        const Backward actual = backward_on(gpu(), logits, vocab, params, targets, coef, in_place);
        check_bitwise(expected.dlogits, actual.dlogits, what + ": dlogits");
        check_bitwise(expected.entropy, actual.entropy, what + ": entropy");
      }
}

}  // namespace
}  // namespace fp8rl::test
