// Sampling and token log-probabilities on the CPU backend against a float64
// reference of the filtered softmax written here from the definition
// (kernels/common/sampling_math.h), including chi-square goodness of fit of
// the sampled frequencies.
#include <algorithm>
#include <limits>
#include <numeric>

#include "kernels/common/counter_rng.h"
#include "ops/ops_test_support.h"

namespace fp8rl::test {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The distribution of SamplingRow p over logits, in float64: probabilities
// (0 outside the kept set).
std::vector<double> reference_distribution(const std::vector<float>& logits, const SamplingRow& p) {
  const size_t n = logits.size();
  std::vector<double> x(n), prob(n, 0.0);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<double>(logits[i]) / p.temperature;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] > x[b]; });
  size_t keep = (p.top_k > 0 && static_cast<size_t>(p.top_k) < n) ? static_cast<size_t>(p.top_k) : n;
  const double m = x[order[0]];
  double z = 0.0;
  for (size_t j = 0; j < keep; ++j) z += std::exp(x[order[j]] - m);
  if (p.top_p < 1.0f) {
    double cumulative = 0.0;
    for (size_t j = 0; j < keep; ++j) {
      cumulative += std::exp(x[order[j]] - m) / z;
      if (cumulative >= p.top_p) {
        keep = j + 1;
        break;
      }
    }
  }
  double zk = 0.0;
  for (size_t j = 0; j < keep; ++j) zk += std::exp(x[order[j]] - m);
  for (size_t j = 0; j < keep; ++j) prob[order[j]] = std::exp(x[order[j]] - m) / zk;
  return prob;
}

std::vector<float> test_logits(size_t vocab, uint32_t seed, float spread) {
  std::vector<float> logits = random_floats(vocab, -spread, spread, seed);
  return logits;
}

// Upper critical value of chi-square with df degrees of freedom at
// significance 1e-4 (Wilson-Hilferty; z = 3.719). The draws are fixed by
// their seeds, so the test is deterministic; 1e-4 keeps a correct sampler far
// from the bound while a wrong distribution (e.g. a mis-set filter) exceeds it
// by orders of magnitude.
double chi_square_critical(int df) {
  const double z = 3.719, a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

struct Draws {
  std::vector<int64_t> counts;
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
};

Draws draw(Backend& backend, const std::vector<float>& logits, SamplingRow p, int64_t rows, uint64_t key) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  std::vector<float> batch(static_cast<size_t>(rows * vocab));
  std::vector<SamplingRow> params(static_cast<size_t>(rows), p);
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(logits.begin(), logits.end(), batch.begin() + r * vocab);
    params[r].uniform = counter_uniform(key, static_cast<uint64_t>(r));
  }
  Draws d;
  d.tokens.resize(static_cast<size_t>(rows));
  d.logprobs.resize(static_cast<size_t>(rows));
  backend.sample(batch.data(), rows, vocab, params.data(), d.tokens.data(), d.logprobs.data());
  d.counts.assign(static_cast<size_t>(vocab), 0);
  for (int32_t t : d.tokens) ++d.counts[static_cast<size_t>(t)];
  // The reported log-probability is token_logprobs' for the same row and token, bit for bit.
  std::vector<float> scored(static_cast<size_t>(rows));
  backend.token_logprobs(batch.data(), rows, vocab, params.data(), d.tokens.data(), scored.data());
  CHECK(std::memcmp(scored.data(), d.logprobs.data(), scored.size() * sizeof(float)) == 0);
  return d;
}

TEST_CASE("sampled frequencies fit the filtered softmax (chi-square, 20000 draws, vocab 20)") {
  const auto backend = make_cpu_backend(2);
  const std::vector<float> logits = test_logits(20, 1, 2.0f);
  struct Case {
    const char* name;
    float temperature;
    int32_t top_k;
    float top_p;
  };
  for (const Case c : {Case{"plain", 1.0f, 0, 1.0f}, Case{"temperature 0.7", 0.7f, 0, 1.0f},
                       Case{"temperature 1.6", 1.6f, 0, 1.0f}, Case{"top-k 7", 1.0f, 7, 1.0f},
                       Case{"top-p 0.8", 1.0f, 0, 0.8f}, Case{"top-k 12 + top-p 0.9 at 0.8", 0.8f, 12, 0.9f}}) {
    CAPTURE(c.name);
    SamplingRow p;
    p.temperature = c.temperature;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    const std::vector<double> prob = reference_distribution(logits, p);
    const int64_t rows = 20000;
    const Draws d = draw(*backend, logits, p, rows, 0xC0FFEE);
    double chi2 = 0.0;
    int support = 0;
    for (size_t i = 0; i < prob.size(); ++i) {
      if (prob[i] == 0.0) {
        CHECK(d.counts[i] == 0);  // never drawn outside the kept set
        continue;
      }
      ++support;
      const double expected = prob[i] * rows;
      const double observed = static_cast<double>(d.counts[i]);
      chi2 += (observed - expected) * (observed - expected) / expected;
    }
    CAPTURE(chi2);
    CHECK(support > 1);
    CHECK(chi2 < chi_square_critical(support - 1));
  }
}

TEST_CASE("log-probabilities match a float64 log-softmax and are -inf outside the kept set") {
  const auto backend = make_cpu_backend(2);
  for (size_t vocab : {size_t{20}, size_t{5000}, size_t{49152}}) {
    const std::vector<float> logits = test_logits(vocab, 2, vocab > 100 ? 1.0f : 3.0f);
    for (const SamplingRow base :
         {SamplingRow{1.0f, 0, 1.0f, 0.0}, SamplingRow{0.6f, 0, 1.0f, 0.0}, SamplingRow{1.0f, 5, 1.0f, 0.0},
          SamplingRow{1.3f, 0, 0.9f, 0.0}, SamplingRow{0.9f, 300, 0.95f, 0.0}, SamplingRow{1.0f, 0, 0.3f, 0.0}}) {
      const std::vector<double> prob = reference_distribution(logits, base);
      const int64_t v = static_cast<int64_t>(vocab);
      // Targets: every token of a small vocab; of a large one the 300 most
      // likely (the kept set and its edge) and every 97th token.
      std::vector<int32_t> targets;
      if (vocab <= 20) {
        targets.resize(vocab);
        std::iota(targets.begin(), targets.end(), 0);
      } else {
        std::vector<int32_t> order(vocab);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
        targets.assign(order.begin(), order.begin() + 300);
        for (int32_t t = 0; t < v; t += 97) targets.push_back(t);
      }
      const int64_t rows = static_cast<int64_t>(targets.size());
      std::vector<float> batch;
      for (int64_t r = 0; r < rows; ++r) batch.insert(batch.end(), logits.begin(), logits.end());
      const std::vector<SamplingRow> params(static_cast<size_t>(rows), base);
      std::vector<float> out(static_cast<size_t>(rows));
      backend->token_logprobs(batch.data(), rows, v, params.data(), targets.data(), out.data());
      double worst = 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        const double pr = prob[static_cast<size_t>(targets[r])];
        if (pr == 0.0) {
          CHECK(out[r] == kNegInf);
        } else {
          worst = std::max(worst, std::fabs(out[r] - std::log(pr)) / std::max(1.0, std::fabs(std::log(pr))));
        }
      }
      CAPTURE(vocab);
      CAPTURE(base.top_k);
      CAPTURE(base.top_p);
      CHECK(worst < 1e-6);
      const Draws d = draw(*backend, logits, base, 64, 99);  // checks sample() against token_logprobs()
      for (size_t i = 0; i < d.tokens.size(); ++i) CHECK(prob[static_cast<size_t>(d.tokens[i])] > 0.0);
    }
  }
}

TEST_CASE("greedy picks the lowest index among the maxima with log-probability 0") {
  const auto backend = make_cpu_backend(1);
  const std::vector<float> logits = {1.0f, 5.0f, -2.0f, 5.0f, kNegInf};
  SamplingRow p;
  p.temperature = 0.0f;
  p.uniform = 0.999;
  int32_t token = -1;
  float logprob = 1.0f;
  backend->sample(logits.data(), 1, 5, &p, &token, &logprob);
  CHECK(token == 1);
  CHECK(logprob == 0.0f);
  for (int32_t t = 0; t < 5; ++t) {
    backend->token_logprobs(logits.data(), 1, 5, &p, &t, &logprob);
    CHECK(logprob == (t == 1 ? 0.0f : kNegInf));
  }
}

TEST_CASE("-inf logits are never drawn, uniform 0 draws the first token of the canonical order") {
  const auto backend = make_cpu_backend(1);
  const std::vector<float> logits = {kNegInf, 2.0f, kNegInf, 2.0f};
  SamplingRow p;
  for (double u : {0.0, 0.25, 0.4999, 0.5, 0.75, 0.9999999}) {
    p.uniform = u;
    int32_t token = -1;
    float logprob = 0.0f;
    backend->sample(logits.data(), 1, 4, &p, &token, &logprob);
    CHECK(token == (u < 0.5 ? 1 : 3));
    CHECK(logprob == static_cast<float>(std::log(0.5)));
  }
}

TEST_CASE("sampling refuses NaN logits and bad parameters") {
  const auto backend = make_cpu_backend(2);
  std::vector<float> logits(3 * 10, 0.5f);
  std::vector<SamplingRow> params(3);
  std::vector<int32_t> tokens(3, 0);
  std::vector<float> logprobs(3);
  logits[2 * 10 + 4] = std::nanf("");
  try {
    backend->sample(logits.data(), 3, 10, params.data(), tokens.data(), logprobs.data());
    FAIL("no exception");
  } catch (const Error& e) {
    CHECK(e.status() == Status::non_finite);
    CHECK(std::string(e.what()).find("row 2") != std::string::npos);
  }
  check_status([&] { backend->token_logprobs(logits.data(), 3, 10, params.data(), tokens.data(), logprobs.data()); },
               Status::non_finite);
  logits[2 * 10 + 4] = 0.5f;
  const auto refused = [&](SamplingRow bad) {
    params[1] = bad;
    check_status([&] { backend->sample(logits.data(), 3, 10, params.data(), tokens.data(), logprobs.data()); },
                 Status::invalid_argument);
    params[1] = SamplingRow{};
  };
  refused(SamplingRow{-1.0f, 0, 1.0f, 0.0});
  refused(SamplingRow{std::numeric_limits<float>::infinity(), 0, 1.0f, 0.0});
  refused(SamplingRow{std::nanf(""), 0, 1.0f, 0.0});
  refused(SamplingRow{1.0f, -1, 1.0f, 0.0});
  refused(SamplingRow{1.0f, 0, 0.0f, 0.0});
  refused(SamplingRow{1.0f, 0, 1.5f, 0.0});
  refused(SamplingRow{1.0f, 0, 1.0f, 1.0});
  refused(SamplingRow{1.0f, 0, 1.0f, -0.1});
  check_status([&] { backend->sample(logits.data(), 3, 0, params.data(), tokens.data(), logprobs.data()); },
               Status::invalid_argument);
  check_status([&] { backend->sample(nullptr, 3, 10, params.data(), tokens.data(), logprobs.data()); },
               Status::invalid_argument);
  tokens[0] = 10;  // out of range target
  check_status([&] { backend->token_logprobs(logits.data(), 3, 10, params.data(), tokens.data(), logprobs.data()); },
               Status::invalid_argument);
}

}  // namespace
}  // namespace fp8rl::test
