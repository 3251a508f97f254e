// Attention on the CPU backend against a float64 softmax-attention reference
// on the dequantized inputs, and its batch invariance: a token's output does
// not depend on the other tokens of the call or on the thread count.
#include <cstring>

#include "ops/ops_test_support.h"

namespace fp8rl::test {
namespace {

struct Problem {
  int64_t heads = 6, kv_heads = 2, head_dim = 64, cache_rows = 0;
  KvFormat format = KvFormat::bf16;
  AttentionMath math = AttentionMath::bf16;
  float q_scale = 4.0f / 448.0f, k_scale = 3.0f / 448.0f, v_scale = 2.0f / 448.0f;
  std::vector<float> q;            // [tokens, heads, head_dim]
  std::vector<uint16_t> k16, v16;  // bf16 cache
  std::vector<uint8_t> k8, v8;     // e4m3 cache
  std::vector<int64_t> key_begin;
  std::vector<int32_t> key_count;
  int64_t tokens() const { return static_cast<int64_t>(key_count.size()); }
  int64_t kv_dim() const { return kv_heads * head_dim; }
};

// A cache of `cache_rows` random rows and one query per (begin, count).
Problem make_problem(KvFormat format, AttentionMath math, int64_t cache_rows,
                     const std::vector<std::pair<int64_t, int32_t>>& ranges, uint32_t seed, int64_t heads = 6,
                     int64_t kv_heads = 2) {
  Problem p;
  p.format = format;
  p.math = math;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.cache_rows = cache_rows;
  for (const auto& r : ranges) {
    p.key_begin.push_back(r.first);
    p.key_count.push_back(r.second);
  }
  p.q = random_floats(static_cast<size_t>(p.tokens() * heads * p.head_dim), -1.5f, 1.5f, seed);
  const std::vector<float> k = random_floats(static_cast<size_t>(cache_rows * p.kv_dim()), -2.0f, 2.0f, seed + 1);
  const std::vector<float> v = random_floats(static_cast<size_t>(cache_rows * p.kv_dim()), -2.0f, 2.0f, seed + 2);
  for (size_t i = 0; i < k.size(); ++i) {
    p.k16.push_back(bf16_nearest(k[i]));
    p.v16.push_back(bf16_nearest(v[i]));
    p.k8.push_back(e4m3_of(k[i], p.k_scale));
    p.v8.push_back(e4m3_of(v[i], p.v_scale));
  }
  return p;
}

AttentionArgs args_of(const Problem& p, float* out) {
  AttentionArgs a;
  a.q = p.q.data();
  const bool e4m3 = p.format == KvFormat::e4m3;
  a.k_cache = e4m3 ? static_cast<const void*>(p.k8.data()) : p.k16.data();
  a.v_cache = e4m3 ? static_cast<const void*>(p.v8.data()) : p.v16.data();
  a.key_begin = p.key_begin.data();
  a.key_count = p.key_count.data();
  a.tokens = p.tokens();
  a.heads = p.heads;
  a.kv_heads = p.kv_heads;
  a.head_dim = p.head_dim;
  a.max_key_count = 0;
  for (int32_t c : p.key_count) a.max_key_count = std::max(a.max_key_count, c);
  a.kv_format = p.format;
  a.math = p.math;
  a.q_scale = p.q_scale;
  a.k_scale = p.k_scale;
  a.v_scale = p.v_scale;
  a.softmax_scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim));
  a.out = out;
  return a;
}

std::vector<float> run_attention(const Problem& p, int threads) {
  std::vector<float> out(p.q.size(), -7.0f);
  make_cpu_backend(threads)->attention(args_of(p, out.data()));
  return out;
}

// The dequantized cached value (what the stored code means).
double cached(const Problem& p, bool is_k, int64_t index) {
  if (p.format == KvFormat::bf16) return bf16_value((is_k ? p.k16 : p.v16)[static_cast<size_t>(index)]);
  return e4m3_value((is_k ? p.k8 : p.v8)[static_cast<size_t>(index)]) * (is_k ? p.k_scale : p.v_scale);
}

// Largest |out - reference| over all outputs, relative to the largest |v|
// (2), with the reference in float64 on the dequantized cache and the
// unrounded queries: softmax(q.k / sqrt(d)) . v.
double worst_error(const Problem& p, const std::vector<float>& out) {
  const int64_t d = p.head_dim, group = p.heads / p.kv_heads;
  double worst = 0.0;
  for (int64_t t = 0; t < p.tokens(); ++t)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t g = h / group, n = p.key_count[t];
      std::vector<double> s(n);
      double m = -1e300;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0.0;
        const int64_t row = (p.key_begin[t] + j) * p.kv_dim() + g * d;
        for (int64_t i = 0; i < d; ++i) dot += p.q[(t * p.heads + h) * d + i] * cached(p, true, row + i);
        s[j] = dot / std::sqrt(static_cast<double>(d));
        m = std::max(m, s[j]);
      }
      double l = 0.0;
      for (double& x : s) l += (x = std::exp(x - m));
      for (int64_t i = 0; i < d; ++i) {
        double o = 0.0;
        for (int64_t j = 0; j < n; ++j) o += s[j] * cached(p, false, (p.key_begin[t] + j) * p.kv_dim() + g * d + i);
        worst = std::max(worst, std::fabs(out[(t * p.heads + h) * d + i] - o / l) / 2.0);
      }
    }
  return worst;
}

std::vector<std::pair<int64_t, int32_t>> causal_ranges(int64_t begin, int32_t length) {
  std::vector<std::pair<int64_t, int32_t>> r;
  for (int32_t i = 1; i <= length; ++i) r.emplace_back(begin, i);
  return r;
}

TEST_CASE("attention matches a float64 softmax-attention reference") {
  // Tolerances, relative to max |v|: BF16 math rounds q and p to BF16 (2^-9
  // relative each), so 1e-2; FP8 math quantizes q and p to E4M3 (2^-4
  // relative each, p's small values absolutely to 2^-19), so 0.1. The cache
  // formats only change what the reference dequantizes.
  struct Case {
    KvFormat format;
    AttentionMath math;
    double tolerance;
  };
  for (const Case c : {Case{KvFormat::bf16, AttentionMath::bf16, 1e-2}, Case{KvFormat::e4m3, AttentionMath::bf16, 1e-2},
                       Case{KvFormat::e4m3, AttentionMath::fp8, 0.1}}) {
    const Problem p = make_problem(c.format, c.math, 40, causal_ranges(3, 37), 100);
    const double error = worst_error(p, run_attention(p, 2));
    CAPTURE(static_cast<int>(c.format));
    CAPTURE(static_cast<int>(c.math));
    CHECK(error < c.tolerance);
  }
}

TEST_CASE("attention over long rows (2000 keys) and without GQA") {
  const Problem gqa = make_problem(KvFormat::e4m3, AttentionMath::fp8, 2100, {{50, 2000}, {0, 1999}, {100, 2000}}, 200);
  CHECK(worst_error(gqa, run_attention(gqa, 2)) < 0.1);
  const Problem mha = make_problem(KvFormat::bf16, AttentionMath::bf16, 2100, {{50, 2000}, {7, 1}}, 300, 4, 4);
  CHECK(worst_error(mha, run_attention(mha, 2)) < 1e-2);
}

TEST_CASE("with one key, attention returns that key's value exactly") {
  Problem p = make_problem(KvFormat::bf16, AttentionMath::bf16, 5, {{4, 1}, {0, 1}}, 400);
  const std::vector<float> out = run_attention(p, 1);
  for (int64_t t = 0; t < p.tokens(); ++t)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < p.head_dim; ++i)
        CHECK(out[(t * p.heads + h) * p.head_dim + i] ==
              static_cast<float>(cached(p, false, p.key_begin[t] * p.kv_dim() + (h / 3) * p.head_dim + i)));
}

TEST_CASE("attention is batch invariant: a token's output is the same alone, in any batch, on any thread count") {
  for (const auto& mode :
       {std::make_pair(KvFormat::bf16, AttentionMath::bf16), std::make_pair(KvFormat::e4m3, AttentionMath::bf16),
        std::make_pair(KvFormat::e4m3, AttentionMath::fp8)}) {
    // A prefill of 24 tokens of one sequence and a decode step of another.
    std::vector<std::pair<int64_t, int32_t>> ranges = causal_ranges(0, 24);
    ranges.emplace_back(30, 250);
    const Problem batch = make_problem(mode.first, mode.second, 300, ranges, 500);
    const std::vector<float> together = run_attention(batch, 2);
    CHECK(run_attention(batch, 1) == together);
    const int64_t row = batch.heads * batch.head_dim;
    for (int64_t t = 0; t < batch.tokens(); ++t) {
      Problem alone = batch;  // the same token in a call of its own
      alone.q.assign(batch.q.begin() + t * row, batch.q.begin() + (t + 1) * row);
      alone.key_begin = {batch.key_begin[t]};
      alone.key_count = {batch.key_count[t]};
      const std::vector<float> single = run_attention(alone, static_cast<int>(t % 2) + 1);
      CHECK(std::memcmp(single.data(), together.data() + t * row, static_cast<size_t>(row) * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("attention refuses bad arguments") {
  const auto backend = make_cpu_backend(1);
  Problem p = make_problem(KvFormat::bf16, AttentionMath::bf16, 4, {{0, 2}}, 600);
  std::vector<float> out(p.q.size());
  AttentionArgs a = args_of(p, out.data());
  AttentionArgs bad = a;
  bad.math = AttentionMath::fp8;  // FP8 math needs an E4M3 cache
  check_status([&] { backend->attention(bad); }, Status::invalid_argument);
  bad = a;
  bad.kv_heads = 4;  // 6 heads are not a multiple of 4
  check_status([&] { backend->attention(bad); }, Status::invalid_argument);
  bad = a;
  bad.out = nullptr;
  check_status([&] { backend->attention(bad); }, Status::invalid_argument);
  bad = a;
  bad.max_key_count = 1;  // key_count[0] = 2 exceeds it
  check_status([&] { backend->attention(bad); }, Status::invalid_argument);
  bad = a;
  bad.head_dim = 0;
  check_status([&] { backend->attention(bad); }, Status::invalid_argument);
  const int32_t zero_keys[1] = {0};
  bad = a;
  bad.key_count = zero_keys;
  check_status([&] { backend->attention(bad); }, Status::invalid_argument);
}

}  // namespace
}  // namespace fp8rl::test
