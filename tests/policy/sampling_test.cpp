// End to end: tokens drawn by generate() follow the distribution the
// full-sequence logits define (chi-square), and their recorded log-probs are
// that distribution's, computed independently here in float64.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "policy_test_support.h"

namespace fp8rl::test {

TEST_CASE("first tokens follow softmax(logits / T) over the top-k (chi-square)") {
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(tiny_qwen3()));
  const int64_t vocab = 301, draws = 3000;
  const float temperature = 1.3f;
  const int32_t top_k = 6;
  const std::vector<int32_t> prompt = {17, 4, 250};

  FlatSequences one;
  one.add(prompt);
  const std::vector<float> logits = rollout::full_logits(policy, one.view());
  const float* last = logits.data() + 2 * vocab;  // predicts the first new token
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return last[a] > last[b]; });
  std::vector<double> probability(static_cast<size_t>(vocab), 0.0);
  double total = 0.0;
  for (int32_t i = 0; i < top_k; ++i) total += std::exp((last[order[i]] - last[order[0]]) / double{temperature});
  for (int32_t i = 0; i < top_k; ++i) {
    probability[order[i]] = std::exp((last[order[i]] - last[order[0]]) / double{temperature}) / total;
  }

  FlatSequences batch;
  std::vector<uint64_t> seeds;
  for (int64_t i = 0; i < draws; ++i) {
    batch.add(prompt);
    seeds.push_back(0x5eed0000u + static_cast<uint64_t>(i));
  }
  rollout::SamplingOptions options;
  options.temperature = temperature;
  options.top_k = top_k;
  options.max_new_tokens = 1;
  const std::vector<rollout::Rollout> rollouts = rollout::generate(policy, batch.view(), seeds, options);
  std::vector<int64_t> counts(static_cast<size_t>(vocab), 0);
  double worst_logprob_error = 0.0;
  for (const rollout::Rollout& r : rollouts) {
    const int32_t token = r.tokens.at(0);
    ++counts[static_cast<size_t>(token)];
    REQUIRE(probability[static_cast<size_t>(token)] > 0.0);  // never outside the top-k
    worst_logprob_error =
        std::max(worst_logprob_error, std::fabs(r.logprobs[0] - std::log(probability[static_cast<size_t>(token)])));
  }
  double chi_square = 0.0;
  for (int32_t i = 0; i < top_k; ++i) {
    const double expected = probability[order[i]] * static_cast<double>(draws);
    REQUIRE(expected >= 5.0);  // the test's premise: every cell well populated
    const double deviation = static_cast<double>(counts[order[i]]) - expected;
    chi_square += deviation * deviation / expected;
  }
  // 5 degrees of freedom: P(chi2 > 20.52) = 0.001. The seeds are fixed, so
  // the statistic is too; a sampler that ignored temperature or top-k would
  // exceed this by orders of magnitude.
  MESSAGE("chi-square " << chi_square << " over " << top_k << " cells, " << draws << " draws");
  CHECK(chi_square < 20.52);
  CHECK(worst_logprob_error < 2e-6);
}

}  // namespace fp8rl::test
