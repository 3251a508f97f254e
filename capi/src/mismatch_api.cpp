#include <string>

#include "api_guard.h"
#include "enum_mapping.h"
#include "core/train/mismatch_metrics.h"
#include "options_convert.h"
#include "struct_output.h"

using namespace fp8rl::capi;

namespace fp8rl::capi {

fp8rl_importance_options to_public(const train::ImportanceOptions& options) {
  fp8rl_importance_options result{};
  result.struct_size = sizeof(result);
  result.mode = static_cast<fp8rl_importance_mode>(options.mode);
  result.low = options.low;
  result.high = options.high;
  return result;
}

train::ImportanceOptions importance_from(const fp8rl_importance_options& options, const std::string& name) {
  const int32_t mode = raw(options.mode);
  require(mode >= FP8RL_IMPORTANCE_OFF && mode <= FP8RL_IMPORTANCE_SEQUENCE_MASKED,
          enum_message(name + ".mode", mode, "an fp8rl_importance_mode value"));
  train::ImportanceOptions importance;
  importance.mode = static_cast<train::ImportanceMode>(mode);
  importance.low = options.low;
  importance.high = options.high;
  return importance;
}

}  // namespace fp8rl::capi

extern "C" {

FP8RL_API fp8rl_status fp8rl_importance_options_init(fp8rl_importance_options* options) {
  return guarded(__func__, [&] {
    fp8rl::require(options != nullptr, "options is NULL");
    *options = to_public(fp8rl::train::ImportanceOptions{});
  });
}

FP8RL_API fp8rl_status fp8rl_mismatch_metrics_init(fp8rl_mismatch_metrics* metrics) {
  return guarded(__func__, [&] { init_struct(metrics, "metrics"); });
}

FP8RL_API fp8rl_status fp8rl_mismatch_metrics_compute(const float* logp_old, const float* logp_gen,
                                                      const int64_t* offsets, int64_t num_sequences,
                                                      const fp8rl_importance_options* options,
                                                      fp8rl_mismatch_metrics* out_metrics) {
  return guarded(__func__, [&] {
    fp8rl::require(logp_old != nullptr, "logp_old is NULL");
    fp8rl::require(logp_gen != nullptr, "logp_gen is NULL");
    fp8rl::require(out_metrics != nullptr, "out_metrics is NULL");
    fp8rl::require(offsets != nullptr, "offsets is NULL");
    fp8rl::require(num_sequences >= 1, "num_sequences is " + std::to_string(num_sequences) + "; expected >= 1");
    const fp8rl::train::ImportanceOptions importance =
        importance_from(read_options(options, to_public(fp8rl::train::ImportanceOptions{}), "options"), "options");
    fp8rl::train::TokenBatch batch;
    batch.offsets = offsets;
    batch.count = num_sequences;
    batch.logp_old = logp_old;
    batch.logp_gen = logp_gen;
    const fp8rl::train::MismatchMetrics m = fp8rl::train::mismatch_metrics(batch, importance);
    fp8rl_mismatch_metrics result{};
    result.tokens = m.tokens;
    result.non_finite_tokens = m.non_finite_tokens;
    result.token_mult_prob_error = m.token_mult_prob_error;
    result.gen_kl_error = m.gen_kl_error;
    result.gen_kl_k1 = m.gen_kl_k1;
    result.policy_kl_error = m.policy_kl_error;
    result.is_weight_mean = m.is_weight_mean;
    result.is_truncated_fraction = m.is_truncated_fraction;
    result.is_masked_fraction = m.is_masked_fraction;
    result.is_masked_sequences = m.is_masked_sequences;
    write_struct(out_metrics, result, "out_metrics");
  });
}

}  // extern "C"
