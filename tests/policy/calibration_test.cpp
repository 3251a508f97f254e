// Recalibration of the attention scales: the percentile and scale formulas by
// hand, the measured scales against the test's own reading of the same pass,
// and the point of it all: an FP8 KV cache whose unit scales saturate (or
// underflow) gets close to the BF16 cache once recalibrated.
#include <doctest/doctest.h>

#include <cmath>

#include "core/policy/calibration.h"
#include "core/policy/model_runner.h"
#include "policy_test_support.h"

namespace fp8rl::test {
namespace {

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

void scale_tensor(model::HostTensor& tensor, float factor) {
  for (float& x : tensor.data) x *= factor;
}

}  // namespace

TEST_CASE("nearest-rank percentile and calibrated scale, by hand") {
  const std::vector<float> values = {7, 1, 9, 3, 10, 2, 8, 4, 6, 5};
  CHECK(policy::nearest_rank_percentile(values, 100.0) == 10.0f);
  CHECK(policy::nearest_rank_percentile(values, 99.9) == 10.0f);  // rank ceil(9.99) = 10
  CHECK(policy::nearest_rank_percentile(values, 50.0) == 5.0f);   // rank 5
  CHECK(policy::nearest_rank_percentile(values, 15.0) == 2.0f);   // rank ceil(1.5) = 2
  CHECK(policy::nearest_rank_percentile(values, 1.0) == 1.0f);    // rank ceil(0.1) = 1
  policy::CalibrationOptions options;
  options.margin = 1.0;
  CHECK(policy::calibrated_scale(448.0f, options) == 1.0f);
  CHECK(policy::calibrated_scale(0.0f, options) == 1.0f);  // nothing to represent
  options.margin = 1.05;
  CHECK(policy::calibrated_scale(100.0f, options) == static_cast<float>(100.0 * 1.05 / 448.0));
  options.percentile = 0.0;
  CHECK_THROWS_AS(policy::validate_calibration_options(options), Error);
  options.percentile = 99.9;
  options.margin = 0.5;
  CHECK_THROWS_AS(policy::validate_calibration_options(options), Error);
}

TEST_CASE("measured scales: the 100th percentile is the largest post-RoPE magnitude seen by the pass") {
  Context context(cpu_request(2), Logger());
  policy::Policy policy(context, tiny_params(tiny_qwen3()));
  const FlatSequences sequences = test_prompts({9, 30, 4}, 301, 12);
  policy::CalibrationOptions options;
  options.percentile = 100.0;
  options.margin = 1.0;
  const policy::AttentionScales measured = policy::measure_attention_scales(policy, sequences.view(), options);

  // The test's own reading of the same pass: every element, not row maxima.
  const model::ModelConfig& config = policy.config();
  const size_t layers = static_cast<size_t>(config.num_layers);
  std::vector<float> q_max(layers, 0.0f), k_max(layers, 0.0f), v_max(layers, 0.0f);
  policy::TokenBatch batch;
  for (int64_t i = 0, row = 0; i < sequences.view().count; row += sequences.view().length(i), ++i) {
    for (int64_t p = 0; p < sequences.view().length(i); ++p) {
      batch.add(sequences.view().sequence(i)[p], static_cast<int32_t>(p), row, false);
    }
  }
  auto running_max = [](float& slot, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) slot = std::max(slot, std::fabs(x[i]));
  };
  policy::KvCache cache(context.backend(), policy.compiled(), model::kv_dim(config),
                        sequences.view().total_tokens());
  policy.runner().run(policy.compiled(), policy.attention_scales(), batch, cache, policy::PassLimits{},
                      [](int64_t, int64_t, const float*) {},
                      [&](size_t layer, int64_t tokens, const float* q, const float* k, const float* v) {
                        running_max(q_max[layer], q, tokens * model::q_dim(config));
                        running_max(k_max[layer], k, tokens * model::kv_dim(config));
                        running_max(v_max[layer], v, tokens * model::kv_dim(config));
                      });
  for (size_t layer = 0; layer < layers; ++layer) {
    CHECK(measured.q[layer] == static_cast<float>(q_max[layer] / 448.0));
    CHECK(measured.k[layer] == static_cast<float>(k_max[layer] / 448.0));
    CHECK(measured.v[layer] == static_cast<float>(v_max[layer] / 448.0));
  }
}

TEST_CASE("recalibration brings an FP8 KV cache that saturates or underflows at unit scales close to BF16") {
  Context context(cpu_request(2), Logger());
  const FlatSequences sequences = test_prompts({24, 40}, 301, 13);
  policy::Recipe fp8_kv;
  fp8_kv.kv_cache = policy::Precision::fp8;
  for (float factor : {300.0f, 0.002f}) {  // |K|, |V| far above 448, or far below E4M3's normal range
    CAPTURE(factor);
    model::ModelParams params = tiny_params(tiny_llama());
    // The same function as the unscaled model: q.k and the attention output
    // are unchanged, only the cached K and V move out of E4M3's unit-scale range.
    for (model::LayerParams& layer : params.layers) {
      scale_tensor(layer.k_proj, factor);
      scale_tensor(layer.q_proj, 1.0f / factor);
      scale_tensor(layer.v_proj, factor);
      scale_tensor(layer.o_proj, 1.0f / factor);
    }
    policy::Policy policy(context, std::move(params));
    const std::vector<float> bf16 = rollout::full_logits(policy, sequences.view());
    policy.set_recipe(fp8_kv);
    const double before = max_abs_difference(rollout::full_logits(policy, sequences.view()), bf16);
    policy::recalibrate_attention_scales(policy, sequences.view(), policy::CalibrationOptions{});
    const double after = max_abs_difference(rollout::full_logits(policy, sequences.view()), bf16);
    MESSAGE("factor " << factor << ": max |logit - BF16| " << before << " at unit scales, " << after
                      << " recalibrated");
    CHECK(policy.attention_scales().k[0] != 1.0f);
    CHECK(after < 0.25 * before);
  }
}

}  // namespace fp8rl::test
