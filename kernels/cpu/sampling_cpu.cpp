#include "sampling_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "../common/sampling_math.h"

namespace fp8rl::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The distribution of one row: the set K (all tokens in index order, or the
// first `count` of scratch.order), m, Z and log Z.
struct Distribution {
  bool greedy = false;
  int32_t argmax = 0;    // the greedy token
  bool ordered = false;  // K is scratch.order[0, count) rather than every token
  int64_t count = 0;
  double m = 0.0;
  double z = 0.0;
  double log_z = 0.0;
};

void check_params(const SamplingRow& p, int64_t row, bool check_uniform, const char* op) {
  if (const char* why = sampling_row_error(p, check_uniform))
    fail(Status::invalid_argument, std::string(op) + ": row " + std::to_string(row) + ": " + why);
}

// Max and lowest argmax of a row; refuses NaN, +Inf and rows without a logit above -Inf.
int32_t checked_argmax(const float* logits, int64_t vocab, int64_t row, const char* op) {
  float best = logits[0];
  int32_t best_index = 0;
  bool bad = false;
  for (int64_t i = 0; i < vocab; ++i) {
    const float v = logits[i];
    bad |= !(v == v) || v == std::numeric_limits<float>::infinity();
    if (v > best) {
      best = v;
      best_index = static_cast<int32_t>(i);
    }
  }
  if (bad) fail(Status::non_finite, std::string(op) + ": logits row " + std::to_string(row) + " contains NaN or +Inf");
  if (best == kNegInf)
    fail(Status::non_finite, std::string(op) + ": logits row " + std::to_string(row) + " is all -Inf");
  return best_index;
}

// Extends the most-likely-first prefix of order [0, vocab) from `sorted` to at least `want` entries.
template <class Less>
int64_t extend_sorted(int32_t* order, int64_t vocab, int64_t sorted, int64_t want, Less less) {
  const int64_t next = std::min(vocab, want);
  if (next <= sorted) return sorted;
  std::nth_element(order + sorted, order + next - 1, order + vocab, less);
  std::sort(order + sorted, order + next, less);
  return next;
}

Distribution prepare(const float* logits, int64_t vocab, const SamplingRow& p, int64_t row, SamplingScratch& s,
                     const char* op) {
  Distribution d;
  d.argmax = checked_argmax(logits, vocab, row, op);
  if (sampling_is_greedy(p)) {
    d.greedy = true;
    return d;
  }
  const float temperature = p.temperature;
  d.m = sampling_scaled_logit(logits[d.argmax], temperature);  // the maximum of x: x is monotone in the logit
  const size_t size = static_cast<size_t>(vocab);
  if (s.weights.size() < size) s.weights.resize(size);
  double* w = s.weights.data();
  const bool top_k = sampling_top_k_active(p, vocab), top_p = sampling_top_p_active(p);

  if (!top_k && !top_p) {  // every token, index order: no sort, no stored x
    double z = 0.0;
    for (int64_t i = 0; i < vocab; ++i) {
      w[i] = sampling_weight(sampling_scaled_logit(logits[i], temperature), d.m);
      z += w[i];
    }
    d.count = vocab;
    d.z = z;
    d.log_z = sampling_log(z);
    return d;
  }

  if (s.scaled.size() < size) s.scaled.resize(size);
  if (s.order.size() < size) s.order.resize(size);
  double* x = s.scaled.data();
  int32_t* order = s.order.data();
  for (int64_t i = 0; i < vocab; ++i) {
    x[i] = sampling_scaled_logit(logits[i], temperature);
    order[i] = static_cast<int32_t>(i);
  }
  const auto less = [x](int32_t a, int32_t b) { return sampling_precedes(x[a], a, x[b], b); };

  d.ordered = true;
  int64_t candidates = vocab, sorted = 0;
  if (top_k) {
    candidates = p.top_k;
    sorted = extend_sorted(order, vocab, 0, candidates, less);
  }
  if (!top_p) {
    double z = 0.0;
    for (int64_t j = 0; j < candidates; ++j) {
      w[j] = sampling_weight(x[order[j]], d.m);
      z += w[j];
    }
    d.count = candidates;
    d.z = z;
    d.log_z = sampling_log(z);
    return d;
  }

  // Z_S in S's own order: most likely first after top-k, else index order.
  double z_s = 0.0;
  if (top_k)
    for (int64_t j = 0; j < candidates; ++j) z_s += sampling_weight(x[order[j]], d.m);
  else
    for (int64_t i = 0; i < vocab; ++i) z_s += sampling_weight(x[i], d.m);
  double cumulative = 0.0;
  int64_t count = candidates, chunk = 256;
  for (int64_t j = 0; j < candidates; ++j) {
    if (j == sorted) {  // only without top-k: sort the next most likely chunk
      sorted = extend_sorted(order, vocab, sorted, sorted + chunk, less);
      chunk *= 4;
    }
    w[j] = sampling_weight(x[order[j]], d.m);
    cumulative += w[j];
    if (sampling_top_p_reached(cumulative, z_s, p.top_p)) {
      count = j + 1;
      break;
    }
  }
  d.count = count;
  d.z = cumulative;  // the sum over K in canonical order: the same additions
  d.log_z = sampling_log(cumulative);
  return d;
}

float logprob_of(const float* logits, const SamplingRow& p, const Distribution& d, const SamplingScratch& s,
                 int32_t token) {
  if (d.greedy) return token == d.argmax ? 0.0f : kNegInf;
  const double x = sampling_scaled_logit(logits[token], p.temperature);
  if (d.ordered) {
    // K is a most-likely-first prefix: token is in it iff it does not come after K's last token.
    const int32_t last = s.order[static_cast<size_t>(d.count - 1)];
    if (token != last && !sampling_precedes(x, token, s.scaled[static_cast<size_t>(last)], last)) return kNegInf;
  }
  return sampling_logprob(x, d.m, d.log_z);
}

int32_t draw(const Distribution& d, const SamplingScratch& s, double uniform) {
  if (d.greedy) return d.argmax;
  const double target = sampling_draw_target(uniform, d.z);
  const double* w = s.weights.data();
  double running = 0.0;
  int64_t last_positive = 0;
  for (int64_t j = 0; j < d.count; ++j) {
    running += w[j];
    if (running > target) return d.ordered ? s.order[static_cast<size_t>(j)] : static_cast<int32_t>(j);
    if (w[j] > 0.0) last_positive = j;
  }
  // Rounding left no token: the last one of K with a non-zero weight.
  return d.ordered ? s.order[static_cast<size_t>(last_positive)] : static_cast<int32_t>(last_positive);
}

}  // namespace

void sample_rows(const float* logits, int64_t vocab, const SamplingRow* params, int32_t* tokens, float* logprobs,
                 int64_t begin, int64_t end, SamplingScratch& scratch) {
  for (int64_t r = begin; r < end; ++r) {
    check_params(params[r], r, true, "sample");
    const float* row = logits + r * vocab;
    const Distribution d = prepare(row, vocab, params[r], r, scratch, "sample");
    const int32_t token = draw(d, scratch, params[r].uniform);
    tokens[r] = token;
    logprobs[r] = logprob_of(row, params[r], d, scratch, token);
  }
}

void token_logprob_rows(const float* logits, int64_t vocab, const SamplingRow* params, const int32_t* targets,
                        float* logprobs, int64_t begin, int64_t end, SamplingScratch& scratch) {
  for (int64_t r = begin; r < end; ++r) {
    check_params(params[r], r, false, "token_logprobs");
    const int32_t target = targets[r];
    if (target < 0 || target >= vocab)
      fail(Status::invalid_argument, "token_logprobs: targets[" + std::to_string(r) + "] = " + std::to_string(target) +
                                         " is outside [0, vocab = " + std::to_string(vocab) + ")");
    const float* row = logits + r * vocab;
    const Distribution d = prepare(row, vocab, params[r], r, scratch, "token_logprobs");
    logprobs[r] = logprob_of(row, params[r], d, scratch, target);
  }
}

}  // namespace fp8rl::cpu
