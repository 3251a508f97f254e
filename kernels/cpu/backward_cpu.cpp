#include "backward_cpu.h"

#include <cmath>
#include <limits>
#include <string>

#include "../common/activation_backward_math.h"
#include "../common/log_softmax_backward_math.h"
#include "../common/norm_backward_math.h"
#include "../common/rope_backward_math.h"
#include "isa_dispatch.h"

namespace fp8rl::cpu {

FP8RL_ISA_BODY void rms_inverse_rows_body(const float* x, int64_t dim, float eps, float* inv, int64_t begin,
                                          int64_t end) {
  for (int64_t r = begin; r < end; ++r) inv[r] = rms_norm_row_inverse(x + r * dim, dim, eps);
}
void rms_inverse_rows(const float* x, int64_t dim, float eps, float* inv, int64_t begin, int64_t end) {
  isa_dispatch<rms_inverse_rows_body>(x, dim, eps, inv, begin, end);
}

FP8RL_ISA_BODY void rms_norm_backward_rows_body(const float* x, const float* weight, const float* dy, const float* inv,
                                                int64_t dim, float* dx, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r)
    rms_norm_backward_row(x + r * dim, weight, dy + r * dim, dim, inv[r], dx + r * dim);
}
void rms_norm_backward_rows(const float* x, const float* weight, const float* dy, const float* inv, int64_t dim,
                            float* dx, int64_t begin, int64_t end) {
  isa_dispatch<rms_norm_backward_rows_body>(x, weight, dy, inv, dim, dx, begin, end);
}

FP8RL_ISA_BODY void rms_norm_weight_columns_body(const float* x, const float* dy, const float* inv, int64_t rows,
                                                 int64_t dim, float* dweight, int64_t begin, int64_t end) {
  for (int64_t r = 0; r < rows; ++r) {  // rows outermost: each column still sums its rows in ascending order
    const float* xr = x + r * dim;
    const float* dyr = dy + r * dim;
    const float ir = inv[r];
    for (int64_t i = begin; i < end; ++i) dweight[i] = add_rn(dweight[i], rms_norm_weight_grad(xr[i], ir, dyr[i]));
  }
}
void rms_norm_weight_columns(const float* x, const float* dy, const float* inv, int64_t rows, int64_t dim,
                             float* dweight, int64_t begin, int64_t end) {
  isa_dispatch<rms_norm_weight_columns_body>(x, dy, inv, rows, dim, dweight, begin, end);
}

FP8RL_ISA_BODY void rope_backward_tokens_body(float* g, const int32_t* positions, int64_t heads, int64_t head_dim,
                                              const float* cos, const float* sin, int64_t begin, int64_t end) {
  const int64_t half = head_dim / 2;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t position = positions[t];
    for (int64_t h = 0; h < heads; ++h)
      rope_unrotate_head(g + (t * heads + h) * head_dim, cos + position * half, sin + position * half, half);
  }
}
void rope_backward_tokens(float* g, const int32_t* positions, int64_t heads, int64_t head_dim, const float* cos,
                          const float* sin, int64_t begin, int64_t end) {
  isa_dispatch<rope_backward_tokens_body>(g, positions, heads, head_dim, cos, sin, begin, end);
}

FP8RL_ISA_BODY void swiglu_backward_span_body(const float* gate, const float* up, const float* dout, float* dgate,
                                              float* dup, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const SwigluGrad g = swiglu_backward_value(gate[i], up[i], dout[i]);
    dgate[i] = g.gate;
    dup[i] = g.up;
  }
}
void swiglu_backward_span(const float* gate, const float* up, const float* dout, float* dgate, float* dup,
                          int64_t begin, int64_t end) {
  isa_dispatch<swiglu_backward_span_body>(gate, up, dout, dgate, dup, begin, end);
}

FP8RL_ISA_BODY void embedding_backward_columns_body(const float* dy, const int32_t* ids, int64_t count, int64_t hidden,
                                                    float* dtable, int64_t begin, int64_t end) {
  for (int64_t t = 0; t < count; ++t) {
    const float* src = dy + t * hidden;
    float* dst = dtable + static_cast<int64_t>(ids[t]) * hidden;
    for (int64_t c = begin; c < end; ++c) dst[c] = add_rn(dst[c], src[c]);
  }
}
void embedding_backward_columns(const float* dy, const int32_t* ids, int64_t count, int64_t hidden, float* dtable,
                                int64_t begin, int64_t end) {
  isa_dispatch<embedding_backward_columns_body>(dy, ids, count, hidden, dtable, begin, end);
}

void check_embedding_ids(const int32_t* ids, int64_t count, int64_t vocab) {
  for (int64_t t = 0; t < count; ++t)
    if (ids[t] < 0 || ids[t] >= vocab)
      fail(Status::invalid_argument, "embedding_backward: ids[" + std::to_string(t) + "] = " + std::to_string(ids[t]) +
                                         " is outside [0, vocab = " + std::to_string(vocab) + ")");
}

void log_softmax_backward_rows(const float* logits, int64_t vocab, const SamplingRow* params, const int32_t* targets,
                               const float* coef, float* dlogits, float* entropy, int64_t begin, int64_t end) {
  const char* op = "log_softmax_backward";
  for (int64_t r = begin; r < end; ++r) {
    const SamplingRow& p = params[r];
    if (const char* why = sampling_row_error(p, false))
      fail(Status::invalid_argument, std::string(op) + ": row " + std::to_string(r) + ": " + why);
    if (!(p.temperature > 0.0f))
      fail(Status::invalid_argument, std::string(op) + ": row " + std::to_string(r) + ": temperature must be > 0");
    const int32_t target = targets[r];
    if (target < 0 || target >= vocab)
      fail(Status::invalid_argument, std::string(op) + ": targets[" + std::to_string(r) +
                                         "] = " + std::to_string(target) +
                                         " is outside [0, vocab = " + std::to_string(vocab) + ")");
    const float* row = logits + r * vocab;
    float best = row[0];
    bool bad = false;
    for (int64_t i = 0; i < vocab; ++i) {
      const float v = row[i];
      bad |= !(v == v) || v == std::numeric_limits<float>::infinity();
      best = v > best ? v : best;
    }
    if (bad) fail(Status::non_finite, std::string(op) + ": logits row " + std::to_string(r) + " contains NaN or +Inf");
    if (best == -std::numeric_limits<float>::infinity())
      fail(Status::non_finite, std::string(op) + ": logits row " + std::to_string(r) + " is all -Inf");
    const double t = p.temperature, m = sampling_scaled_logit(best, p.temperature);
    double z = 0.0;
    for (int64_t i = 0; i < vocab; ++i) z += std::exp(sampling_scaled_logit(row[i], p.temperature) - m);
    const double log_z = std::log(z), g = coef[r];
    double h = 0.0;
    float* out = dlogits + r * vocab;  // may alias row: element i is read before it is written
    for (int64_t i = 0; i < vocab; ++i) {
      const double x = sampling_scaled_logit(row[i], p.temperature);
      const double prob = log_softmax_prob(x, m, z);
      h += log_softmax_entropy_term(prob, x, m, log_z);
      out[i] = log_softmax_logit_grad(prob, i == target, g, t);
    }
    entropy[r] = static_cast<float>(h);
  }
}

}  // namespace fp8rl::cpu
