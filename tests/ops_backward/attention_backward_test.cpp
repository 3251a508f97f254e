// attention_backward on the CPU against central finite differences of a
// float64 softmax attention on the dequantized values: the query as the
// forward sees it (BF16- or E4M3-rounded, straight through), the cached K and
// V as stored (code * scale), exact probabilities. Also: thread invariance of
// the accumulated dk / dv and argument checks.
#include <cmath>

#include "ops_backward/backward_test_support.h"

namespace fp8rl::test {
namespace {

struct Problem {
  KvFormat format = KvFormat::bf16;
  AttentionMath math = AttentionMath::bf16;
  int64_t heads = 4, kv_heads = 2, head_dim = 20, cache_rows = 0;
  std::vector<int64_t> key_begin;
  std::vector<int32_t> key_count;
  std::vector<float> q, dout;
  std::vector<uint16_t> k16, v16;
  std::vector<uint8_t> k8, v8;
  float q_scale = 1.0f / 448.0f, k_scale = 1.5f / 448.0f, v_scale = 1.2f / 448.0f;
  float softmax_scale = 0.0f;
  int64_t tokens() const { return static_cast<int64_t>(key_begin.size()); }
  int64_t kv_dim() const { return kv_heads * head_dim; }
  int32_t max_keys() const {
    int32_t m = 1;
    for (int32_t c : key_count) m = std::max(m, c);
    return m;
  }
};

Problem make_problem(KvFormat format, AttentionMath math, int64_t cache_rows,
                     const std::vector<std::pair<int64_t, int32_t>>& ranges, uint32_t seed, int64_t heads = 4,
                     int64_t kv_heads = 2, int64_t head_dim = 20) {
  Problem p;
  p.format = format;
  p.math = math;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.cache_rows = cache_rows;
  p.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  for (const auto& r : ranges) {
    p.key_begin.push_back(r.first);
    p.key_count.push_back(r.second);
  }
  p.q = random_floats(static_cast<size_t>(p.tokens() * heads * head_dim), -1.0f, 1.0f, seed);
  p.dout = random_floats(p.q.size(), -1.0f, 1.0f, seed + 1);
  const std::vector<float> k = random_floats(static_cast<size_t>(cache_rows * p.kv_dim()), -1.0f, 1.0f, seed + 2);
  const std::vector<float> v = random_floats(k.size(), -1.0f, 1.0f, seed + 3);
  for (size_t i = 0; i < k.size(); ++i) {
    if (format == KvFormat::bf16) {
      p.k16.push_back(bf16_nearest(k[i]));
      p.v16.push_back(bf16_nearest(v[i]));
    } else {
      p.k8.push_back(e4m3_of(k[i], p.k_scale));
      p.v8.push_back(e4m3_of(v[i], p.v_scale));
    }
  }
  return p;
}

struct Grads {
  std::vector<float> dq, dk, dv;
};

AttentionBackwardArgs backward_args(const Problem& p, Grads& g) {
  AttentionBackwardArgs b;
  AttentionArgs& a = b.forward;
  a.q = p.q.data();
  a.k_cache = p.format == KvFormat::bf16 ? static_cast<const void*>(p.k16.data()) : p.k8.data();
  a.v_cache = p.format == KvFormat::bf16 ? static_cast<const void*>(p.v16.data()) : p.v8.data();
  a.key_begin = p.key_begin.data();
  a.key_count = p.key_count.data();
  a.tokens = p.tokens();
  a.heads = p.heads;
  a.kv_heads = p.kv_heads;
  a.head_dim = p.head_dim;
  a.max_key_count = p.max_keys();
  a.kv_format = p.format;
  a.math = p.math;
  a.q_scale = p.q_scale;
  a.k_scale = p.k_scale;
  a.v_scale = p.v_scale;
  a.softmax_scale = p.softmax_scale;
  b.dout = p.dout.data();
  b.dq = g.dq.data();
  b.dk = g.dk.data();
  b.dv = g.dv.data();
  b.cache_row_count = p.cache_rows;
  return b;
}

// dk and dv start at `fill` (they accumulate).
Grads run_backward(const Problem& p, int threads, float fill = 0.0f) {
  Grads g;
  g.dq.assign(p.q.size(), -7.0f);
  g.dk.assign(static_cast<size_t>(p.cache_rows * p.kv_dim()), fill);
  g.dv.assign(g.dk.size(), fill);
  make_cpu_backend(threads)->attention_backward(backward_args(p, g));
  return g;
}

// The query as the forward sees it, dequantized (test oracles, not kernels/common).
std::vector<double> query_values(const Problem& p) {
  std::vector<double> out(p.q.size());
  for (size_t i = 0; i < p.q.size(); ++i)
    out[i] = p.math == AttentionMath::fp8 ? e4m3_value(e4m3_of(p.q[i], p.q_scale)) * p.q_scale
                                          : static_cast<double>(bf16_value(bf16_nearest(p.q[i])));
  return out;
}

std::vector<double> cache_values(const Problem& p, bool is_k) {
  std::vector<double> out(static_cast<size_t>(p.cache_rows * p.kv_dim()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = p.format == KvFormat::bf16 ? bf16_value((is_k ? p.k16 : p.v16)[i])
                                        : e4m3_value((is_k ? p.k8 : p.v8)[i]) * (is_k ? p.k_scale : p.v_scale);
  return out;
}

// sum over outputs of softmax(Q.K * softmax_scale) . V times dout, in float64.
double attention_loss(const Problem& p, const std::vector<double>& q, const std::vector<double>& k,
                      const std::vector<double>& v) {
  const int64_t d = p.head_dim, group = p.heads / p.kv_heads;
  double loss = 0.0;
  for (int64_t t = 0; t < p.tokens(); ++t)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t n = p.key_count[t], base = (t * p.heads + h) * d;
      std::vector<double> s(static_cast<size_t>(n));
      double m = -1e300;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t row = (p.key_begin[t] + j) * p.kv_dim() + (h / group) * d;
        double dot = 0.0;
        for (int64_t i = 0; i < d; ++i) dot += q[base + i] * k[row + i];
        s[j] = dot * p.softmax_scale;
        m = std::max(m, s[j]);
      }
      double l = 0.0;
      for (double& x : s) l += (x = std::exp(x - m));
      for (int64_t j = 0; j < n; ++j) {
        const int64_t row = (p.key_begin[t] + j) * p.kv_dim() + (h / group) * d;
        for (int64_t i = 0; i < d; ++i) loss += s[j] / l * v[row + i] * p.dout[base + i];
      }
    }
  return loss;
}

std::vector<std::pair<int64_t, int32_t>> causal_ranges(int64_t begin, int32_t length) {
  std::vector<std::pair<int64_t, int32_t>> r;
  for (int32_t i = 1; i <= length; ++i) r.emplace_back(begin, i);
  return r;
}

TEST_CASE("attention_backward matches finite differences of a float64 attention on the dequantized values") {
  // Tolerances, relative to the largest reference gradient: dq and dk use the
  // exact (unrounded) probabilities, so only FP32 arithmetic separates them
  // from the reference: 1e-5. dv weighs dout by the rounded p^ of the
  // forward: BF16 (2^-9 relative) gives 1e-2, E4M3 (2^-4 relative) 0.08.
  struct Case {
    KvFormat format;
    AttentionMath math;
    double dv_tolerance;
  };
  for (const Case c : {Case{KvFormat::bf16, AttentionMath::bf16, 1e-2}, Case{KvFormat::e4m3, AttentionMath::bf16, 1e-2},
                       Case{KvFormat::e4m3, AttentionMath::fp8, 0.08}}) {
    // Two sequences: rows 1..6 (causal) and rows 8..10 (causal); rows 0, 7, 11 unused.
    std::vector<std::pair<int64_t, int32_t>> ranges = causal_ranges(1, 6);
    for (const auto& r : causal_ranges(8, 3)) ranges.push_back(r);
    const Problem p = make_problem(c.format, c.math, 12, ranges, 100);
    const float fill = 0.25f;
    const Grads g = run_backward(p, 2, fill);
    const std::vector<double> q = query_values(p), k = cache_values(p, true), v = cache_values(p, false);
    const auto ref_dq = finite_difference([&](const std::vector<double>& x) { return attention_loss(p, x, k, v); }, q);
    const auto ref_dk = finite_difference([&](const std::vector<double>& x) { return attention_loss(p, q, x, v); }, k);
    const auto ref_dv = finite_difference([&](const std::vector<double>& x) { return attention_loss(p, q, k, x); }, v);
    std::vector<float> dk = g.dk, dv = g.dv;
    for (float& x : dk) x -= fill;
    for (float& x : dv) x -= fill;
    CAPTURE(static_cast<int>(c.format));
    CAPTURE(static_cast<int>(c.math));
    CHECK(relative_max_error(g.dq, ref_dq) < 1e-5);
    CHECK(relative_max_error(dk, ref_dk) < 1e-5);
    CHECK(relative_max_error(dv, ref_dv) < c.dv_tolerance);
    for (int64_t row : {0, 7, 11})  // no token reads these rows: untouched
      for (int64_t i = 0; i < p.kv_dim(); ++i) {
        CHECK(g.dk[row * p.kv_dim() + i] == fill);
        CHECK(g.dv[row * p.kv_dim() + i] == fill);
      }
  }
}

TEST_CASE("attention_backward without GQA and with a head_dim of several lanes") {
  const Problem p = make_problem(KvFormat::bf16, AttentionMath::bf16, 9, causal_ranges(0, 9), 200, 2, 2, 40);
  const Grads g = run_backward(p, 1);
  const std::vector<double> q = query_values(p), k = cache_values(p, true), v = cache_values(p, false);
  CHECK(relative_max_error(
            g.dq, finite_difference([&](const std::vector<double>& x) { return attention_loss(p, x, k, v); }, q)) <
        1e-4);
  CHECK(relative_max_error(
            g.dk, finite_difference([&](const std::vector<double>& x) { return attention_loss(p, q, x, v); }, k)) <
        1e-4);
  CHECK(relative_max_error(
            g.dv, finite_difference([&](const std::vector<double>& x) { return attention_loss(p, q, k, x); }, v)) <
        1e-2);
}

TEST_CASE("attention_backward gives the same bits on 1, 2 and 3 threads") {
  for (const auto& fm :
       {std::make_pair(KvFormat::bf16, AttentionMath::bf16), std::make_pair(KvFormat::e4m3, AttentionMath::fp8)}) {
    std::vector<std::pair<int64_t, int32_t>> ranges = causal_ranges(0, 30);
    for (const auto& r : causal_ranges(40, 20)) ranges.push_back(r);
    const Problem p = make_problem(fm.first, fm.second, 64, ranges, 300, 8, 4, 64);
    const Grads one = run_backward(p, 1, 0.5f);
    for (int threads : {2, 3}) {
      const Grads many = run_backward(p, threads, 0.5f);
      CAPTURE(threads);
      CHECK(same_bits(one.dq, many.dq));
      CHECK(same_bits(one.dk, many.dk));
      CHECK(same_bits(one.dv, many.dv));
    }
  }
}

TEST_CASE("attention_backward accumulates: two calls add up to about twice one") {
  const Problem p = make_problem(KvFormat::e4m3, AttentionMath::bf16, 5, causal_ranges(0, 5), 400);
  Grads g;
  g.dq.assign(p.q.size(), 0.0f);
  g.dk.assign(static_cast<size_t>(p.cache_rows * p.kv_dim()), 0.0f);
  g.dv.assign(g.dk.size(), 0.0f);
  const auto backend = make_cpu_backend(2);
  backend->attention_backward(backward_args(p, g));
  const Grads once = g;
  backend->attention_backward(backward_args(p, g));
  CHECK(same_bits(g.dq, once.dq));  // dq is written, not accumulated
  // Each call adds its contributions one by one into what is there, so the
  // second sum rounds differently from the first: equal up to FP32 rounding.
  for (size_t i = 0; i < g.dk.size(); ++i) {
    CHECK(std::fabs(g.dk[i] - 2.0f * once.dk[i]) <= 1e-5f * (1.0f + std::fabs(once.dk[i])));
    CHECK(std::fabs(g.dv[i] - 2.0f * once.dv[i]) <= 1e-5f * (1.0f + std::fabs(once.dv[i])));
  }
}

TEST_CASE("attention_backward refuses bad arguments before accumulating anything") {
  Problem p = make_problem(KvFormat::bf16, AttentionMath::bf16, 6, causal_ranges(0, 6), 500);
  Grads g;
  g.dq.assign(p.q.size(), 0.0f);
  g.dk.assign(static_cast<size_t>(p.cache_rows * p.kv_dim()), 0.0f);
  g.dv.assign(g.dk.size(), 0.0f);
  const auto backend = make_cpu_backend(2);
  const auto refused = [&](const AttentionBackwardArgs& args) {
    check_status([&] { backend->attention_backward(args); }, Status::invalid_argument);
  };
  AttentionBackwardArgs args = backward_args(p, g);
  args.cache_row_count = 5;  // the last token's keys end at row 6
  refused(args);
  args = backward_args(p, g);
  args.dk = nullptr;
  refused(args);
  args = backward_args(p, g);
  args.forward.math = AttentionMath::fp8;  // needs an E4M3 cache
  refused(args);
  args = backward_args(p, g);
  args.forward.heads = 3;  // not a multiple of kv_heads
  refused(args);
  args = backward_args(p, g);
  args.forward.max_key_count = 3;  // below key_count of later tokens
  refused(args);
  args = backward_args(p, g);
  args.cache_row_count = 0;
  refused(args);
  for (float x : g.dk) CHECK(x == 0.0f);
  for (float x : g.dv) CHECK(x == 0.0f);
  args = backward_args(p, g);
  args.forward.tokens = 0;  // no tokens: nothing to do, nothing checked
  args.dout = nullptr;
  backend->attention_backward(args);
}

}  // namespace
}  // namespace fp8rl::test
