// The CPU attention restructures the loops of kernels/common/attention_math.h
// for speed (units over heads, SIMD row decoders, encode-then-decode of p);
// this test holds it to the definition bit for bit: a direct per-(token,
// head) evaluation of the attention_math.h functions, every ISA level and
// thread count, both caches and both maths.
#include <cstring>

#include "kernels/common/attention_math.h"
#include "ops_test_support.h"

namespace fp8rl::test {
namespace {

struct Case {
  int64_t tokens, heads, kv_heads, head_dim;
  KvFormat format;
  AttentionMath math;
};

struct Inputs {
  std::vector<float> q;       // [tokens, heads, head_dim]
  std::vector<uint8_t> k, v;  // [rows, kv_heads * head_dim] of the format's element size
  std::vector<int64_t> key_begin;
  std::vector<int32_t> key_count;
  int32_t max_keys = 0;
};

Inputs make_inputs(const Case& c, uint32_t seed) {
  Inputs in;
  const int64_t rows = 300, kv_dim = c.kv_heads * c.head_dim;
  const size_t element = c.format == KvFormat::e4m3 ? 1 : 2;
  in.q = random_floats(static_cast<size_t>(c.tokens * c.heads * c.head_dim), -3.0f, 3.0f, seed);
  const std::vector<float> k = random_floats(static_cast<size_t>(rows * kv_dim), -2.0f, 2.0f, seed + 1);
  const std::vector<float> v = random_floats(static_cast<size_t>(rows * kv_dim), -2.0f, 2.0f, seed + 2);
  in.k.resize(k.size() * element);
  in.v.resize(v.size() * element);
  for (size_t i = 0; i < k.size(); ++i) {
    if (c.format == KvFormat::e4m3) {
      in.k[i] = e4m3_of(k[i], 0.01f);
      in.v[i] = e4m3_of(v[i], 0.01f);
    } else {
      const uint16_t kb = bf16_encode(k[i]), vb = bf16_encode(v[i]);
      std::memcpy(&in.k[2 * i], &kb, 2);
      std::memcpy(&in.v[2 * i], &vb, 2);
    }
  }
  for (int64_t t = 0; t < c.tokens; ++t) {
    const int32_t count = static_cast<int32_t>(1 + (t * 97) % 299);  // 1 .. 299 keys
    in.key_count.push_back(count);
    in.key_begin.push_back((t * 31) % (rows - count + 1));
    in.max_keys = std::max(in.max_keys, count);
  }
  return in;
}

AttentionArgs make_args(const Case& c, const Inputs& in, float* out) {
  AttentionArgs args;
  args.q = in.q.data();
  args.k_cache = in.k.data();
  args.v_cache = in.v.data();
  args.key_begin = in.key_begin.data();
  args.key_count = in.key_count.data();
  args.tokens = c.tokens;
  args.heads = c.heads;
  args.kv_heads = c.kv_heads;
  args.head_dim = c.head_dim;
  args.max_key_count = in.max_keys;
  args.kv_format = c.format;
  args.math = c.math;
  args.q_scale = 0.05f;
  args.k_scale = 0.01f;
  args.v_scale = 0.01f;
  args.softmax_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  args.out = out;
  return args;
}

// The definition, one (token, head) at a time.
std::vector<float> by_definition(const AttentionArgs& a) {
  const bool e4m3 = a.kv_format == KvFormat::e4m3, fp8 = a.math == AttentionMath::fp8;
  const AttentionScales scales = attention_scales(e4m3, fp8, a.q_scale, a.k_scale, a.v_scale, a.softmax_scale);
  const int64_t d = a.head_dim, kv_dim = a.kv_heads * d, group = a.heads / a.kv_heads;
  std::vector<float> out(static_cast<size_t>(a.tokens * a.heads * d));
  auto cached = [&](const void* cache, int64_t row, int64_t kv_head, int64_t i) {
    const int64_t at = row * kv_dim + kv_head * d + i;
    if (e4m3) return attention_cached_e4m3(static_cast<const uint8_t*>(cache)[at]);
    uint16_t bits;
    std::memcpy(&bits, static_cast<const uint8_t*>(cache) + 2 * at, 2);
    return attention_cached_bf16(bits);
  };
  for (int64_t t = 0; t < a.tokens; ++t) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t g = h / group, keys = a.key_count[t];
      std::vector<float> q_hat(static_cast<size_t>(d)), k_hat(static_cast<size_t>(d)), p(static_cast<size_t>(keys));
      for (int64_t i = 0; i < d; ++i) q_hat[i] = attention_query_value(a.q[(t * a.heads + h) * d + i], fp8, a.q_scale);
      for (int64_t j = 0; j < keys; ++j) {
        for (int64_t i = 0; i < d; ++i) k_hat[i] = cached(a.k_cache, a.key_begin[t] + j, g, i);
        p[j] = attention_score(q_hat.data(), k_hat.data(), d, scales.score);
      }
      float m = p[0];
      for (float s : p) m = s > m ? s : m;
      float l = 0.0f;
      for (float& s : p) {
        s = exp_f32(sub_rn(s, m));
        l = add_rn(l, s);
      }
      for (int64_t i = 0; i < d; ++i) {
        float o = 0.0f;
        for (int64_t j = 0; j < keys; ++j)
          o = add_rn(o, mul_rn(attention_prob_value(p[j], fp8), cached(a.v_cache, a.key_begin[t] + j, g, i)));
        out[(t * a.heads + h) * d + i] = attention_output(o, scales.out, l);
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("CPU attention equals the attention_math.h definition bit for bit, every ISA and thread count") {
  const Case cases[] = {
      {7, 9, 3, 64, KvFormat::bf16, AttentionMath::bf16}, {5, 9, 3, 64, KvFormat::e4m3, AttentionMath::bf16},
      {6, 9, 3, 64, KvFormat::e4m3, AttentionMath::fp8},  {1, 9, 3, 64, KvFormat::e4m3, AttentionMath::fp8},
      {4, 4, 4, 40, KvFormat::e4m3, AttentionMath::fp8},  {3, 8, 1, 24, KvFormat::bf16, AttentionMath::bf16},
      {2, 6, 2, 136, KvFormat::e4m3, AttentionMath::fp8},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(c.tokens);
    CAPTURE(c.head_dim);
    CAPTURE(static_cast<int>(c.format));
    CAPTURE(static_cast<int>(c.math));
    const Inputs in = make_inputs(c, seed += 10);
    std::vector<float> out(in.q.size());
    const std::vector<float> expected = by_definition(make_args(c, in, out.data()));
    for (SimdLevel level : {SimdLevel::portable, SimdLevel::avx2, SimdLevel::avx512, SimdLevel::avx512_bf16}) {
      for (int threads : {1, 2}) {
        std::fill(out.begin(), out.end(), -1.0f);
        make_cpu_backend(threads, level)->attention(make_args(c, in, out.data()));
        CHECK(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace fp8rl::test
