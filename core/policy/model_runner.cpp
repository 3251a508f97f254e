#include "core/policy/model_runner.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {
namespace {

size_t as_size(int64_t value) { return static_cast<size_t>(value); }

}  // namespace

void TokenBatch::clear() {
  token_ids.clear();
  positions.clear();
  key_begin.clear();
  wants_logits.clear();
}

void TokenBatch::add(int32_t token, int32_t position, int64_t sequence_first_row, bool logits) {
  token_ids.push_back(token);
  positions.push_back(position);
  key_begin.push_back(sequence_first_row);
  wants_logits.push_back(logits ? 1 : 0);
}

ModelRunner::ModelRunner(Backend& backend, const model::ModelConfig& config)
    : backend_(backend), config_(config), rope_(config) {}

void ModelRunner::run(const CompiledModel& model, const AttentionScales& scales, const TokenBatch& batch,
                      KvCache& cache, const PassLimits& limits, const LogitsSink& sink,
                      const ActivationObserver& observer) {
  require(limits.max_tokens > 0 && limits.max_logit_rows > 0, "forward pass limits must be positive");
  // Split into passes of at most max_tokens tokens and max_logit_rows wanted logits.
  Range range{0, 0, 0};
  int64_t wanted = 0;
  while (range.begin < batch.size()) {
    int64_t rows = 0;
    range.end = range.begin;
    while (range.end < batch.size() && static_cast<int64_t>(range.end - range.begin) < limits.max_tokens) {
      if (batch.wants_logits[range.end] && rows == limits.max_logit_rows) break;
      rows += batch.wants_logits[range.end];
      ++range.end;
    }
    range.logits_before = wanted;
    pass(model, scales, batch, range, cache, sink, observer);
    wanted += rows;
    range.begin = range.end;
  }
}

void ModelRunner::upload_pass_indices(const TokenBatch& batch, const Range& range) {
  const size_t tokens = range.end - range.begin;
  std::vector<int64_t> cache_rows(tokens), logit_rows;
  std::vector<int32_t> key_count(tokens);
  max_key_count_ = 0;
  for (size_t i = 0; i < tokens; ++i) {
    const size_t t = range.begin + i;
    cache_rows[i] = batch.key_begin[t] + batch.positions[t];
    key_count[i] = batch.positions[t] + 1;
    max_key_count_ = std::max(max_key_count_, key_count[i]);
    if (batch.wants_logits[t]) logit_rows.push_back(static_cast<int64_t>(i));
  }
  ids_.upload(batch.token_ids.data() + range.begin, tokens);
  positions_.upload(batch.positions.data() + range.begin, tokens);
  key_begin_.upload(batch.key_begin.data() + range.begin, tokens);
  cache_rows_.upload(cache_rows.data(), tokens);
  key_count_.upload(key_count.data(), tokens);
  logit_rows_.upload(logit_rows.data(), logit_rows.size());
}

void ModelRunner::ensure_workspace(int64_t tokens, int64_t logit_rows) {
  if (tokens > capacity_tokens_) {
    const int64_t hidden = config_.hidden_size, inter = config_.intermediate_size;
    const int64_t qd = model::q_dim(config_), kvd = model::kv_dim(config_);
    const int64_t max_in = std::max({hidden, qd, inter});
    const size_t n = as_size(tokens);
    ids_ = DeviceArray<int32_t>(backend_, n);
    positions_ = DeviceArray<int32_t>(backend_, n);
    key_count_ = DeviceArray<int32_t>(backend_, n);
    cache_rows_ = DeviceArray<int64_t>(backend_, n);
    key_begin_ = DeviceArray<int64_t>(backend_, n);
    logit_rows_ = DeviceArray<int64_t>(backend_, n);
    residual_ = DeviceArray<float>(backend_, n * as_size(hidden));
    normed_ = DeviceArray<float>(backend_, n * as_size(hidden));
    q_ = DeviceArray<float>(backend_, n * as_size(qd));
    k_ = DeviceArray<float>(backend_, n * as_size(kvd));
    v_ = DeviceArray<float>(backend_, n * as_size(kvd));
    attention_ = DeviceArray<float>(backend_, n * as_size(qd));
    projected_ = DeviceArray<float>(backend_, n * as_size(hidden));
    gate_ = DeviceArray<float>(backend_, n * as_size(inter));
    up_ = DeviceArray<float>(backend_, n * as_size(inter));
    a_codes_ = DeviceArray<uint8_t>(backend_, n * as_size(max_in));
    a_scales_ = DeviceArray<float>(backend_, n * as_size(ceil_div(max_in, kQuantBlock)));
    a_bf16_ = DeviceArray<uint16_t>(backend_, n * as_size(max_in));
    capacity_tokens_ = tokens;
  }
  if (logit_rows > capacity_logit_rows_) {
    const size_t rows = as_size(logit_rows);
    head_in_ = DeviceArray<float>(backend_, rows * as_size(config_.hidden_size));
    head_bf16_ = DeviceArray<uint16_t>(backend_, rows * as_size(config_.hidden_size));
    logits_ = DeviceArray<float>(backend_, rows * as_size(config_.vocab_size));
    capacity_logit_rows_ = logit_rows;
  }
}

void ModelRunner::pass(const CompiledModel& model, const AttentionScales& scales, const TokenBatch& batch,
                       const Range& range, KvCache& cache, const LogitsSink& sink, const ActivationObserver& observer) {
  const int64_t tokens = static_cast<int64_t>(range.end - range.begin);
  int64_t rows = 0;
  int32_t max_position = 0;
  for (size_t t = range.begin; t < range.end; ++t) {
    rows += batch.wants_logits[t];
    max_position = std::max(max_position, batch.positions[t]);
  }
  ensure_workspace(tokens, std::max<int64_t>(rows, 1));
  upload_pass_indices(batch, range);
  rope_.ensure(backend_, int64_t{max_position} + 1);

  backend_.embedding(model.embedding(), config_.vocab_size, config_.hidden_size, ids_.data(), tokens, residual_.data());
  for (size_t layer = 0; layer < model.layers().size(); ++layer) {
    layer_forward(model, layer, scales, tokens, cache, observer);
  }
  if (rows == 0) return;
  head(model, rows, logits_.data());
  sink(range.logits_before, rows, logits_.data());
}

void ModelRunner::linear(const LinearWeights& weights, ScaleFormat scale_format, const float* x, int64_t rows,
                         float* y) {
  const int64_t in = weights.in_features, out = weights.out_features;
  if (weights.fp8) {
    QuantSpec spec;
    spec.layout = BlockLayout::tile_1x128;
    spec.scale_format = scale_format;
    backend_.quantize(x, DType::f32, rows, in, spec, a_codes_.data(), a_scales_.data());
    Fp8Matrix a;
    a.codes = a_codes_.data();
    a.scales = a_scales_.data();
    a.rows = rows;
    a.cols = in;
    backend_.gemm_fp8(a, weights.fp8_matrix(), y, DType::f32);
  } else {
    backend_.to_bf16(x, rows * in, a_bf16_.data());
    backend_.gemm_bf16(a_bf16_.data(), weights.bf16.data(), rows, out, in, y, DType::f32);
  }
  if (!weights.bias.empty()) backend_.add_bias(y, weights.bias.data(), rows, out);
}

void ModelRunner::layer_forward(const CompiledModel& model, size_t index, const AttentionScales& scales, int64_t tokens,
                                KvCache& cache, const ActivationObserver& observer) {
  const CompiledLayer& layer = model.layers()[index];
  const ScaleFormat format = model.scale_format();
  const int64_t hidden = config_.hidden_size, head_dim = config_.head_dim;
  const int64_t heads = config_.num_attention_heads, kv_heads = config_.num_key_value_heads;
  const float eps = static_cast<float>(config_.rms_norm_eps);

  // Attention block: x += o_proj(attention(rope(q), rope(k), v)) over rms_norm(x).
  backend_.rms_norm(residual_.data(), layer.input_norm.data(), tokens, hidden, eps, normed_.data());
  linear(layer.q, format, normed_.data(), tokens, q_.data());  // [tokens, heads * head_dim]
  linear(layer.k, format, normed_.data(), tokens, k_.data());  // [tokens, kv_heads * head_dim]
  linear(layer.v, format, normed_.data(), tokens, v_.data());  // [tokens, kv_heads * head_dim]
  if (!layer.q_norm.empty()) {
    backend_.rms_norm(q_.data(), layer.q_norm.data(), tokens * heads, head_dim, eps, q_.data());
    backend_.rms_norm(k_.data(), layer.k_norm.data(), tokens * kv_heads, head_dim, eps, k_.data());
  }
  backend_.rope(q_.data(), positions_.data(), tokens, heads, head_dim, rope_.cos(), rope_.sin(), rope_.positions());
  backend_.rope(k_.data(), positions_.data(), tokens, kv_heads, head_dim, rope_.cos(), rope_.sin(), rope_.positions());
  if (observer) observer(index, tokens, q_.data(), k_.data(), v_.data());

  KvStoreArgs store;
  store.cache_rows = cache_rows_.data();
  store.tokens = tokens;
  store.kv_dim = kv_heads * head_dim;
  store.format = layer.precision.kv_format;
  store.source = k_.data();
  store.scale = scales.k[index];
  store.cache = cache.keys(index);
  backend_.kv_store(store);
  store.source = v_.data();
  store.scale = scales.v[index];
  store.cache = cache.values(index);
  backend_.kv_store(store);

  AttentionArgs attention;
  attention.q = q_.data();
  attention.k_cache = cache.keys(index);
  attention.v_cache = cache.values(index);
  attention.key_begin = key_begin_.data();
  attention.key_count = key_count_.data();
  attention.tokens = tokens;
  attention.heads = heads;
  attention.kv_heads = kv_heads;
  attention.head_dim = head_dim;
  attention.max_key_count = max_key_count_;
  attention.kv_format = layer.precision.kv_format;
  attention.math = layer.precision.attention;
  attention.q_scale = scales.q[index];
  attention.k_scale = scales.k[index];
  attention.v_scale = scales.v[index];
  attention.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  attention.out = attention_.data();
  backend_.attention(attention);
  linear(layer.o, format, attention_.data(), tokens, projected_.data());
  backend_.add(residual_.data(), projected_.data(), tokens * hidden);

  // MLP block: x += down(silu(gate(h)) * up(h)), h = rms_norm(x).
  backend_.rms_norm(residual_.data(), layer.post_attention_norm.data(), tokens, hidden, eps, normed_.data());
  linear(layer.gate, format, normed_.data(), tokens, gate_.data());
  linear(layer.up, format, normed_.data(), tokens, up_.data());
  backend_.swiglu(gate_.data(), up_.data(), tokens * config_.intermediate_size, gate_.data());
  linear(layer.down, format, gate_.data(), tokens, projected_.data());
  backend_.add(residual_.data(), projected_.data(), tokens * hidden);
}

void ModelRunner::head(const CompiledModel& model, int64_t rows, float* logits) {
  const int64_t hidden = config_.hidden_size;
  backend_.gather_rows(residual_.data(), hidden, logit_rows_.data(), rows, head_in_.data());
  backend_.rms_norm(head_in_.data(), model.final_norm(), rows, hidden, static_cast<float>(config_.rms_norm_eps),
                    head_in_.data());
  backend_.to_bf16(head_in_.data(), rows * hidden, head_bf16_.data());
  backend_.gemm_bf16(head_bf16_.data(), model.lm_head(), rows, config_.vocab_size, hidden, logits, DType::f32);
}

}  // namespace fp8rl::policy
