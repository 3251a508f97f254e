#include "core/policy/model_runner.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/blocks/dense_mlp.h"
#include "core/blocks/moe_mlp.h"
#include "kernels/common/quant_layout.h"

namespace fp8rl::policy {
namespace {

using model::Linear;
using model::Norm;

size_t as_size(int64_t value) { return static_cast<size_t>(value); }

// Row inputs, where given, are one per wanted token.
void check_row_inputs(const TokenBatch& batch) {
  const size_t wanted = batch.wanted();
  auto check = [wanted](const char* name, size_t count) {
    require(count == 0 || count == wanted, "forward pass: " + std::to_string(count) + " row " + name + " for " +
                                               std::to_string(wanted) + " tokens wanting logits");
  };
  check("params", batch.row_params.size());
  check("targets", batch.row_targets.size());
}

}  // namespace

ModelRunner::ModelRunner(Backend& backend, const model::ModelConfig& config)
    : backend_(backend), config_(config), rope_(config), upload_(backend) {}

void ModelRunner::run(const CompiledModel& model, const AttentionScales& scales, const TokenBatch& batch,
                      KvCache& cache, const PassLimits& limits, const LogitsSink& sink,
                      const ActivationObserver& observer, PassRecorder* recorder, const RoutingObserver& routing) {
  require(limits.max_tokens > 0 && limits.max_logit_rows > 0, "forward pass limits must be positive");
  check_row_inputs(batch);
  require(recorder == nullptr || static_cast<int64_t>(batch.size()) <= limits.max_tokens,
          "a recorded forward pass must fit one pass: " + std::to_string(batch.size()) + " tokens, limit " +
              std::to_string(limits.max_tokens));
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
    pass(model, scales, batch, range, cache, sink, observer, recorder, routing);
    wanted += rows;
    range.begin = range.end;
  }
}

void ModelRunner::ensure_workspace(int64_t tokens, int64_t logit_rows) {
  if (tokens > capacity_tokens_) {
    const int64_t hidden = config_.hidden_size, inter = config_.intermediate_size;
    const int64_t qd = model::q_dim(config_), kvd = model::kv_dim(config_);
    int64_t max_in = 0;  // the widest linear input
    for (const model::LinearPart& part : model::kLinearParts) max_in = std::max(max_in, part.in_features(config_));
    if (model::sparse_layer_count(config_) > 0) {
      for (const model::ExpertPart& part : model::kExpertParts) max_in = std::max(max_in, part.in_features(config_));
    }
    const size_t n = as_size(tokens);
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
    logits_ = DeviceArray<float>(backend_, rows * as_size(config_.vocab_size));
    capacity_logit_rows_ = logit_rows;
  }
}

void ModelRunner::pass(const CompiledModel& model, const AttentionScales& scales, const TokenBatch& batch,
                       const Range& range, KvCache& cache, const LogitsSink& sink, const ActivationObserver& observer,
                       PassRecorder* recorder, const RoutingObserver& routing) {
  const int64_t tokens = static_cast<int64_t>(range.end - range.begin);
  int64_t rows = 0;
  int32_t max_position = 0;
  for (size_t t = range.begin; t < range.end; ++t) {
    rows += batch.wants_logits[t];
    max_position = std::max(max_position, batch.positions[t]);
  }
  ensure_workspace(tokens, std::max<int64_t>(rows, 1));
  pass_ = upload_pass(upload_, batch, range.begin, range.end, static_cast<size_t>(range.logits_before),
                      static_cast<size_t>(rows));
  rope_.ensure(backend_, int64_t{max_position} + 1);

  backend_.embedding(model.embedding(), config_.vocab_size, config_.hidden_size, pass_.ids, tokens, residual_.data());
  if (recorder) recorder->begin(tokens, pass_);
  const LayerActivations shared = workspace_activations();
  for (size_t layer = 0; layer < model.layers().size(); ++layer) {
    layer_forward(model, layer, scales, static_cast<int64_t>(range.begin), tokens, cache, observer, routing,
                  recorder ? recorder->layer(layer) : shared);
  }
  if (recorder) {
    backend_.copy_within(recorder->final_residual(), residual_.data(),
                         static_cast<size_t>(tokens * config_.hidden_size) * sizeof(float));
  }
  if (rows == 0) return;
  head(model, rows, logits_.data());
  sink(range.logits_before, rows, logits_.data());
}

// x is quantized to E4M3 tiles, or rounded to BF16, once for every output that
// reads it in that format (each output row depends only on its own x row, so
// sharing changes no bit).
void ModelRunner::linear(std::initializer_list<blocks::LinearOutput> outputs, ScaleFormat scale_format,
                         const float* x, int64_t rows) {
  bool quantized = false, rounded = false;
  for (const blocks::LinearOutput& output : outputs) {
    const LinearWeights& weights = output.weights;
    const int64_t in = weights.in_features, out = weights.out_features;
    if (weights.fp8) {
      Fp8Matrix a;
      a.codes = a_codes_.data();
      a.scales = a_scales_.data();
      a.rows = rows;
      a.cols = in;
      if (!quantized) {
        QuantSpec spec;
        spec.layout = BlockLayout::tile_1x128;
        spec.scale_format = scale_format;
        backend_.quantize(x, DType::f32, rows, in, spec, a_codes_.data(), a_scales_.data());
        quantized = true;
      }
      backend_.gemm_fp8(a, weights.fp8_matrix(), output.y, DType::f32);
    } else {
      if (!rounded) backend_.to_bf16(x, rows * in, a_bf16_.data());
      rounded = true;
      backend_.gemm_bf16(a_bf16_.data(), weights.bf16.data(), rows, out, in, output.y, DType::f32);
    }
    if (!weights.bias.empty()) backend_.add_bias(output.y, weights.bias.data(), rows, out);
  }
}

LayerActivations ModelRunner::workspace_activations() {
  LayerActivations a;
  a.attention_normed = normed_.data();
  a.q_raw = a.q = q_.data();
  a.k_raw = a.k = k_.data();
  a.v = v_.data();
  a.attention = attention_.data();
  a.mlp_normed = normed_.data();
  a.gate = a.act = gate_.data();
  a.up = up_.data();
  return a;
}

void ModelRunner::layer_forward(const CompiledModel& model, size_t index, const AttentionScales& scales, int64_t first,
                                int64_t tokens, KvCache& cache, const ActivationObserver& observer,
                                const RoutingObserver& routing, const LayerActivations& a) {
  const CompiledLayer& layer = model.layers()[index];
  const ScaleFormat format = model.scale_format();
  const int64_t hidden = config_.hidden_size, head_dim = config_.head_dim;
  const int64_t heads = config_.num_attention_heads, kv_heads = config_.num_key_value_heads;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const size_t residual_bytes = static_cast<size_t>(tokens * hidden) * sizeof(float);

  // Attention block: x += o_proj(attention(rope(q), rope(k), v)) over rms_norm(x).
  if (a.attention_input) backend_.copy_within(a.attention_input, residual_.data(), residual_bytes);
  backend_.rms_norm(residual_.data(), layer.norm(Norm::input).data(), tokens, hidden, eps, a.attention_normed);
  linear({{layer.linear(Linear::q), a.q_raw},   // [tokens, heads * head_dim]
          {layer.linear(Linear::k), a.k_raw},   // [tokens, kv_heads * head_dim]
          {layer.linear(Linear::v), a.v}},      // [tokens, kv_heads * head_dim]
         format, a.attention_normed, tokens);
  if (!layer.norm(Norm::q).empty()) {
    backend_.rms_norm(a.q_raw, layer.norm(Norm::q).data(), tokens * heads, head_dim, eps, a.q);
    backend_.rms_norm(a.k_raw, layer.norm(Norm::k).data(), tokens * kv_heads, head_dim, eps, a.k);
  }
  backend_.rope(a.q, pass_.positions, tokens, heads, head_dim, rope_.cos(), rope_.sin(), rope_.positions());
  backend_.rope(a.k, pass_.positions, tokens, kv_heads, head_dim, rope_.cos(), rope_.sin(), rope_.positions());
  if (observer) observer(index, tokens, a.q, a.k, a.v);

  KvStoreArgs store;
  store.cache_rows = pass_.cache_rows;
  store.tokens = tokens;
  store.kv_dim = kv_heads * head_dim;
  store.format = layer.precision.kv_format;
  store.source = a.k;
  store.scale = scales.k[index];
  store.cache = cache.keys(index);
  backend_.kv_store(store);
  store.source = a.v;
  store.scale = scales.v[index];
  store.cache = cache.values(index);
  backend_.kv_store(store);

  backend_.attention(attention_args(config_, layer, index, scales, pass_, tokens, a.q, cache, a.attention));
  linear({{layer.linear(Linear::o), projected_.data()}}, format, a.attention, tokens);
  backend_.add(residual_.data(), projected_.data(), tokens * hidden);

  // MLP block: x += mlp(h), h = rms_norm(x); mlp the dense SwiGLU or the experts.
  if (a.mlp_input) backend_.copy_within(a.mlp_input, residual_.data(), residual_bytes);
  backend_.rms_norm(residual_.data(), layer.norm(Norm::post_attention).data(), tokens, hidden, eps, a.mlp_normed);
  const blocks::LinearForward mlp_linear = [&](std::initializer_list<blocks::LinearOutput> outputs, const float* x,
                                                int64_t rows) { linear(outputs, format, x, rows); };
  if (layer.experts.empty()) {
    blocks::dense_mlp_forward(backend_, mlp_linear, layer, config_, tokens, a, projected_.data());
  } else {
    blocks::MoeState& state = a.moe ? *a.moe : moe_workspace_;
    state.ensure(backend_, config_, tokens, a.moe != nullptr);
    blocks::moe_mlp_forward(backend_, mlp_linear, layer, config_, tokens, a.mlp_normed, state, projected_.data());
    if (routing) routing(index, first, tokens, state.chosen_host.data());
  }
  backend_.add(residual_.data(), projected_.data(), tokens * hidden);
}

AttentionArgs attention_args(const model::ModelConfig& config, const CompiledLayer& layer, size_t index,
                             const AttentionScales& scales, const PassIndices& pass, int64_t tokens, const float* q,
                             const KvCache& cache, float* out) {
  AttentionArgs attention;
  attention.q = q;
  attention.k_cache = cache.keys(index);
  attention.v_cache = cache.values(index);
  attention.key_begin = pass.key_begin;
  attention.key_count = pass.key_count;
  attention.tokens = tokens;
  attention.heads = config.num_attention_heads;
  attention.kv_heads = config.num_key_value_heads;
  attention.head_dim = config.head_dim;
  attention.max_key_count = pass.max_key_count;
  attention.kv_format = layer.precision.kv_format;
  attention.math = layer.precision.attention;
  attention.q_scale = scales.q[index];
  attention.k_scale = scales.k[index];
  attention.v_scale = scales.v[index];
  attention.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(config.head_dim)));
  attention.out = out;
  return attention;
}

void ModelRunner::head(const CompiledModel& model, int64_t rows, float* logits) {
  const int64_t hidden = config_.hidden_size;
  backend_.gather_rows(residual_.data(), hidden, pass_.logit_rows, rows, head_in_.data());
  backend_.rms_norm(head_in_.data(), model.final_norm(), rows, hidden, static_cast<float>(config_.rms_norm_eps),
                    head_in_.data());
  head_logits_.compute(backend_, model, head_in_.data(), rows, logits);
}

}  // namespace fp8rl::policy
