#include "core/train/token_head.h"

#include <algorithm>

namespace fp8rl::train {
namespace {

size_t as_size(int64_t value) { return static_cast<size_t>(value); }

}  // namespace

TokenHead::TokenHead(Backend& backend, const model::ModelConfig& config, int64_t chunk_rows)
    : backend_(backend), config_(config), chunk_rows_(chunk_rows) {
  const size_t chunk = as_size(chunk_rows), hidden = as_size(config.hidden_size), vocab = as_size(config.vocab_size);
  rows_ = DeviceArray<int32_t>(backend, chunk);
  row_indices_ = DeviceArray<int64_t>(backend, chunk);
  targets_ = DeviceArray<int32_t>(backend, chunk);
  params_ = DeviceArray<SamplingRow>(backend, chunk);
  gathered_ = DeviceArray<float>(backend, chunk * hidden);
  normed_ = DeviceArray<float>(backend, chunk * hidden);
  logits_ = DeviceArray<float>(backend, chunk * vocab);
  values_ = DeviceArray<float>(backend, chunk);
  entropy_ = DeviceArray<float>(backend, chunk);
}

void TokenHead::chunk_logits(const policy::CompiledModel& model, const float* final_residual, const HeadRows& rows,
                             size_t begin, int64_t count, float temperature) {
  const int64_t hidden = config_.hidden_size;
  const size_t n = as_size(count);
  // gather_rows takes int64 indices; the scatter in backward (embedding_backward) int32 ones.
  std::vector<int64_t> wide(rows.rows.begin() + static_cast<std::ptrdiff_t>(begin),
                            rows.rows.begin() + static_cast<std::ptrdiff_t>(begin + n));
  row_indices_.upload(wide.data(), n);
  rows_.upload(rows.rows.data() + begin, n);
  targets_.upload(rows.targets.data() + begin, n);
  SamplingRow row;
  row.temperature = temperature;  // full softmax: no top-k / top-p in training
  const std::vector<SamplingRow> params(n, row);
  params_.upload(params.data(), n);

  backend_.gather_rows(final_residual, hidden, row_indices_.data(), count, gathered_.data());
  backend_.rms_norm(gathered_.data(), model.final_norm(), count, hidden, static_cast<float>(config_.rms_norm_eps),
                    normed_.data());
  head_logits_.compute(backend_, model, normed_.data(), count, logits_.data());
}

void TokenHead::logprobs(const policy::CompiledModel& model, const float* final_residual, const HeadRows& rows,
                         float temperature, float* logp) {
  for (size_t begin = 0; begin < rows.size(); begin += as_size(chunk_rows_)) {
    const int64_t count = std::min<int64_t>(chunk_rows_, static_cast<int64_t>(rows.size() - begin));
    chunk_logits(model, final_residual, rows, begin, count, temperature);
    backend_.token_logprobs(logits_.data(), count, config_.vocab_size, params_.data(), targets_.data(), values_.data());
    values_.download(logp + begin, as_size(count));
  }
}

void TokenHead::backward(const policy::CompiledModel& model, const policy::LinearWeights& head_transposed,
                         const float* final_residual, int64_t pass_tokens, const HeadRows& rows, float temperature,
                         const float* grad_logp, float* dresidual, const HeadGrads& grads, float* entropy) {
  const int64_t hidden = config_.hidden_size, vocab = config_.vocab_size;
  dnormed_.reserve_discarding(backend_, as_size(chunk_rows_ * hidden));
  dhead_.reserve_discarding(backend_, as_size(vocab * hidden));
  for (size_t begin = 0; begin < rows.size(); begin += as_size(chunk_rows_)) {
    const int64_t count = std::min<int64_t>(chunk_rows_, static_cast<int64_t>(rows.size() - begin));
    chunk_logits(model, final_residual, rows, begin, count, temperature);
    values_.upload(grad_logp + begin, as_size(count));
    // [count, vocab] dL/dlogits, in place of the logits.
    backend_.log_softmax_backward(logits_.data(), count, vocab, params_.data(), targets_.data(), values_.data(),
                                  logits_.data(), entropy_.data());
    entropy_.download(entropy + begin, as_size(count));

    // dnormed [count, hidden] = dlogits . W_head, in the head's precision as the forward.
    const ScaleFormat format = model.scale_format();
    linear_dgrad(backend_, head_transposed, format, logits_.data(), count, dnormed_.data(), scratch_);
    // dW_head [vocab, hidden] += dlogits^T . normed.
    linear_wgrad(backend_, model.head_fp8(), format, logits_.data(), normed_.data(), count, vocab, hidden,
                 dhead_.data(), scratch_);
    backend_.add(grads.head, dhead_.data(), vocab * hidden);
    // Through the final norm, then back to the pass's rows.
    backend_.rms_norm_backward(gathered_.data(), model.final_norm(), dnormed_.data(), count, hidden,
                               static_cast<float>(config_.rms_norm_eps), dnormed_.data(), grads.final_norm);
    // A scatter-add of rows: embedding_backward with the row indices as ids.
    backend_.embedding_backward(dnormed_.data(), rows_.data(), count, pass_tokens, hidden, dresidual);
  }
}

}  // namespace fp8rl::train
