// GPU kv_store, attention and attention_backward against the CPU backend, bit
// for bit: the CUDA kernels call the same kernels/common functions and sum in
// the CPU's orders (lane_dot's 16-lane tree for the dots, key order for the
// softmax sums and the P.V / dS.K sums, ascending (token, head) for the += into
// dk and dv), so no tolerance is needed.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_test_support.h"
#include "kernels/common/kv_cache_math.h"

namespace fp8rl::test {
namespace {

// ---------------------------------------------------------------- kv_store

std::vector<uint8_t> kv_store_on(Backend& backend, const std::vector<float>& source, const std::vector<int64_t>& rows,
                                 int64_t kv_dim, KvFormat format, float scale, const std::vector<uint8_t>& initial) {
  const Buffer src = to_backend(backend, source), dst_rows = to_backend(backend, rows),
               cache = to_backend(backend, initial);
  KvStoreArgs args;
  args.source = src.as<float>();
  args.cache_rows = dst_rows.as<int64_t>();
  args.tokens = static_cast<int64_t>(rows.size());
  args.kv_dim = kv_dim;
  args.format = format;
  args.scale = scale;
  args.cache = cache.as<void>();
  backend.kv_store(args);
  return from_backend<uint8_t>(backend, cache, initial.size());
}

TEST_CASE("cuda kv_store: bit-identical to the CPU backend (BF16 and E4M3, scattered rows, special values)") {
  const int64_t cache_rows = 50;
  for (const int64_t kv_dim : {int64_t{80}, int64_t{128}, int64_t{17}})
    for (const KvFormat format : {KvFormat::bf16, KvFormat::e4m3}) {
      const int64_t tokens = 37;
      std::vector<float> source = random_matrix(tokens, kv_dim, 11, 8);
      source[3] = NAN;
      source[5] = INFINITY;
      source[7] = -INFINITY;
      source[9] = 1e-42f;
      source[11] = -0.0f;
      std::vector<int64_t> rows(static_cast<size_t>(tokens));
      for (int64_t t = 0; t < tokens; ++t) rows[static_cast<size_t>(t)] = (t * 7 + 3) % cache_rows;  // distinct
      const size_t element = format == KvFormat::bf16 ? 2 : 1;
      // Rows the call does not write must keep their bytes.
      std::vector<uint8_t> initial(static_cast<size_t>(cache_rows * kv_dim) * element);
      for (size_t i = 0; i < initial.size(); ++i) initial[i] = static_cast<uint8_t>(i * 37 + 1);
      const float scale = 0.05f;
      const std::vector<uint8_t> expected = kv_store_on(cpu(), source, rows, kv_dim, format, scale, initial);
      const std::vector<uint8_t> actual = kv_store_on(gpu(), source, rows, kv_dim, format, scale, initial);
      const int64_t diff = first_difference(expected, actual);
      CHECK_MESSAGE(diff == -1, (format == KvFormat::bf16 ? "bf16" : "e4m3"), " kv_dim ", kv_dim,
                    ": first different byte at ", diff);
    }
}

// ---------------------------------------------------------------- attention

// One attention problem: a cache of `cache_rows` rows, one key range per token.
struct Problem {
  KvFormat format = KvFormat::bf16;
  AttentionMath math = AttentionMath::bf16;
  int64_t heads = 4, kv_heads = 2, head_dim = 64, cache_rows = 0;
  int32_t max_key_count = 0;
  std::vector<int64_t> key_begin;
  std::vector<int32_t> key_count;
  std::vector<float> q, dout, dk0, dv0;
  std::vector<uint8_t> k_cache, v_cache;  // raw bytes: BF16 pairs or E4M3 codes
  float q_scale = 4.0f / 448.0f, k_scale = 4.0f / 448.0f, v_scale = 3.0f / 448.0f;
  float softmax_scale = 0.0f;
  int64_t tokens() const { return static_cast<int64_t>(key_begin.size()); }
  int64_t kv_dim() const { return kv_heads * head_dim; }
  std::string describe() const {
    return std::string(format == KvFormat::bf16 ? "bf16 cache" : "e4m3 cache") +
           (math == AttentionMath::bf16 ? ", bf16 math" : ", fp8 math") + ", heads " + std::to_string(heads) + "/" +
           std::to_string(kv_heads) + ", head_dim " + std::to_string(head_dim) + ", tokens " +
           std::to_string(tokens()) + ", max_key_count " + std::to_string(max_key_count);
  }
};

std::vector<uint8_t> cache_bytes(const std::vector<float>& values, KvFormat format, float scale) {
  std::vector<uint8_t> bytes;
  for (const float v : values) {
    if (format == KvFormat::bf16) {
      const uint16_t bits = kv_store_bf16(v);
      bytes.push_back(static_cast<uint8_t>(bits & 0xFF));
      bytes.push_back(static_cast<uint8_t>(bits >> 8));
    } else {
      bytes.push_back(kv_store_e4m3(v, scale));
    }
  }
  return bytes;
}

// ranges: (key_begin, key_count) per token; max_key_count is the largest count
// plus `slack` (the bound only sizes scratch).
Problem make_problem(KvFormat format, AttentionMath math, int64_t heads, int64_t kv_heads, int64_t head_dim,
                     int64_t cache_rows, const std::vector<std::pair<int64_t, int32_t>>& ranges, uint32_t seed,
                     int32_t slack = 3) {
  Problem p;
  p.format = format;
  p.math = math;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.cache_rows = cache_rows;
  p.softmax_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  int32_t max_count = 1;
  for (const auto& r : ranges) {
    p.key_begin.push_back(r.first);
    p.key_count.push_back(r.second);
    max_count = std::max(max_count, r.second);
  }
  p.max_key_count = max_count + slack;
  p.q = random_matrix(p.tokens(), heads * head_dim, seed, 1);
  p.dout = random_matrix(p.tokens(), heads * head_dim, seed + 1, 1);
  p.dk0 = random_matrix(cache_rows, p.kv_dim(), seed + 2);
  p.dv0 = random_matrix(cache_rows, p.kv_dim(), seed + 3);
  p.k_cache = cache_bytes(random_matrix(cache_rows, p.kv_dim(), seed + 4, 1), format, p.k_scale);
  p.v_cache = cache_bytes(random_matrix(cache_rows, p.kv_dim(), seed + 5, 1), format, p.v_scale);
  return p;
}

// The problem's inputs on one backend.
struct Inputs {
  Buffer q, k, v, begin, count;
  Inputs(Backend& b, const Problem& p)
      : q(to_backend(b, p.q)),
        k(to_backend(b, p.k_cache)),
        v(to_backend(b, p.v_cache)),
        begin(to_backend(b, p.key_begin)),
        count(to_backend(b, p.key_count)) {}

  AttentionArgs args(const Problem& p, float* out) const {
    AttentionArgs a;
    a.q = q.as<float>();
    a.k_cache = k.as<void>();
    a.v_cache = v.as<void>();
    a.key_begin = begin.as<int64_t>();
    a.key_count = count.as<int32_t>();
    a.tokens = p.tokens();
    a.heads = p.heads;
    a.kv_heads = p.kv_heads;
    a.head_dim = p.head_dim;
    a.max_key_count = p.max_key_count;
    a.kv_format = p.format;
    a.math = p.math;
    a.q_scale = p.q_scale;
    a.k_scale = p.k_scale;
    a.v_scale = p.v_scale;
    a.softmax_scale = p.softmax_scale;
    a.out = out;
    return a;
  }
};

std::vector<float> attention_on(Backend& backend, const Problem& p) {
  const Inputs in(backend, p);
  const auto count = static_cast<size_t>(p.tokens() * p.heads * p.head_dim);
  const Buffer out = to_backend(backend, std::vector<float>(count, -7.0f));
  backend.attention(in.args(p, out.as<float>()));
  return from_backend<float>(backend, out, count);
}

struct Grads {
  std::vector<float> dq, dk, dv;
};

Grads attention_backward_on(Backend& backend, const Problem& p) {
  const Inputs in(backend, p);
  const auto count = static_cast<size_t>(p.tokens() * p.heads * p.head_dim);
  const Buffer dout = to_backend(backend, p.dout), dq = to_backend(backend, std::vector<float>(count, -7.0f)),
               dk = to_backend(backend, p.dk0), dv = to_backend(backend, p.dv0);
  AttentionBackwardArgs b;
  b.forward = in.args(p, nullptr);
  b.dout = dout.as<float>();
  b.dq = dq.as<float>();
  b.dk = dk.as<float>();
  b.dv = dv.as<float>();
  b.cache_row_count = p.cache_rows;
  backend.attention_backward(b);
  return {from_backend<float>(backend, dq, count), from_backend<float>(backend, dk, p.dk0.size()),
          from_backend<float>(backend, dv, p.dv0.size())};
}

void check_forward(const Problem& p) {
  const std::vector<float> expected = attention_on(cpu(), p);
  const std::vector<float> actual = attention_on(gpu(), p);
  const int64_t diff = first_difference(expected, actual);
  CHECK_MESSAGE(diff == -1, p.describe(), ": first different output at ", diff,
                diff >= 0 ? " (cpu " + std::to_string(expected[static_cast<size_t>(diff)]) + ", gpu " +
                                std::to_string(actual[static_cast<size_t>(diff)]) + ")"
                          : std::string());
}

void check_backward(const Problem& p) {
  const Grads expected = attention_backward_on(cpu(), p);
  const Grads actual = attention_backward_on(gpu(), p);
  const int64_t dq = first_difference(expected.dq, actual.dq);
  const int64_t dk = first_difference(expected.dk, actual.dk);
  const int64_t dv = first_difference(expected.dv, actual.dv);
  CHECK_MESSAGE(dq == -1, p.describe(), ": first different dq at ", dq);
  CHECK_MESSAGE(dk == -1, p.describe(), ": first different dk at ", dk);
  CHECK_MESSAGE(dv == -1, p.describe(), ": first different dv at ", dv);
}

// Prefill: two packed sequences, one from its start (counts 1..19 over rows
// 0..18), one continuing (counts 9..13 over rows 30..42): tokens share rows.
std::vector<std::pair<int64_t, int32_t>> prefill_ranges() {
  std::vector<std::pair<int64_t, int32_t>> r;
  for (int32_t c = 1; c <= 19; ++c) r.emplace_back(0, c);
  for (int32_t c = 9; c <= 13; ++c) r.emplace_back(30, c);
  return r;
}

// Decode: one token over many keys (not a multiple of the 8 keys a CTA scores at once).
std::vector<std::pair<int64_t, int32_t>> decode_ranges() { return {{7, 1501}}; }

// Batched decode: tokens of different sequences, a single-key one among them.
std::vector<std::pair<int64_t, int32_t>> batched_decode_ranges() { return {{0, 700}, {900, 1}, {1000, 529}}; }

// Every (cache format, math) pair attention accepts, at head_dim 64 and 40.
template <typename F>
void for_each_config(F&& f) {
  for (const int64_t head_dim : {int64_t{64}, int64_t{40}}) {
    f(KvFormat::bf16, AttentionMath::bf16, head_dim);
    f(KvFormat::e4m3, AttentionMath::bf16, head_dim);
    f(KvFormat::e4m3, AttentionMath::fp8, head_dim);
  }
}

TEST_CASE("cuda attention: bit-identical to the CPU backend (prefill, GQA 4/2, head_dim 64 and 40)") {
  for_each_config([](KvFormat format, AttentionMath math, int64_t head_dim) {
    check_forward(make_problem(format, math, 4, 2, head_dim, 50, prefill_ranges(), 21));
  });
}

TEST_CASE("cuda attention: bit-identical to the CPU backend (decode over many keys, batched decode)") {
  for_each_config([](KvFormat format, AttentionMath math, int64_t head_dim) {
    check_forward(make_problem(format, math, 4, 2, head_dim, 1600, decode_ranges(), 31, 500));
    check_forward(make_problem(format, math, 4, 2, head_dim, 1600, batched_decode_ranges(), 41));
  });
}

TEST_CASE("cuda attention: odd shapes (head_dim 17 and 1, 6 query heads on 1 kv head, no GQA)") {
  check_forward(make_problem(KvFormat::bf16, AttentionMath::bf16, 6, 1, 17, 50, prefill_ranges(), 51));
  check_forward(make_problem(KvFormat::e4m3, AttentionMath::fp8, 6, 1, 17, 50, prefill_ranges(), 52));
  check_forward(make_problem(KvFormat::e4m3, AttentionMath::fp8, 3, 3, 1, 1600, batched_decode_ranges(), 53));
  check_forward(make_problem(KvFormat::bf16, AttentionMath::bf16, 2, 2, 200, 50, prefill_ranges(), 54));
}

TEST_CASE("cuda attention: a token's output does not depend on the other tokens of the call") {
  // The same token alone and in a batch: the GPU agrees with itself (and the CPU).
  const Problem batch = make_problem(KvFormat::e4m3, AttentionMath::fp8, 4, 2, 64, 1600, batched_decode_ranges(), 61);
  Problem single = batch;
  single.key_begin = {batch.key_begin[2]};
  single.key_count = {batch.key_count[2]};
  const auto row = static_cast<size_t>(batch.heads * batch.head_dim);
  single.q.assign(batch.q.begin() + static_cast<std::ptrdiff_t>(2 * row), batch.q.end());
  const std::vector<float> all = attention_on(gpu(), batch);
  const std::vector<float> alone = attention_on(gpu(), single);
  CHECK(first_difference(std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(2 * row), all.end()), alone) ==
        -1);
}

TEST_CASE("cuda attention_backward: bit-identical to the CPU backend (prefill, GQA 4/2, head_dim 64 and 40)") {
  for_each_config([](KvFormat format, AttentionMath math, int64_t head_dim) {
    check_backward(make_problem(format, math, 4, 2, head_dim, 50, prefill_ranges(), 71));
  });
}

TEST_CASE("cuda attention_backward: bit-identical to the CPU backend (decode, batched decode, odd shapes)") {
  for_each_config([](KvFormat format, AttentionMath math, int64_t head_dim) {
    check_backward(make_problem(format, math, 4, 2, head_dim, 1600, decode_ranges(), 81));
    check_backward(make_problem(format, math, 4, 2, head_dim, 1600, batched_decode_ranges(), 82));
  });
  check_backward(make_problem(KvFormat::bf16, AttentionMath::bf16, 6, 1, 17, 50, prefill_ranges(), 83));
  check_backward(make_problem(KvFormat::e4m3, AttentionMath::fp8, 3, 3, 1, 50, prefill_ranges(), 84));
  check_backward(make_problem(KvFormat::bf16, AttentionMath::bf16, 2, 2, 300, 50, prefill_ranges(), 85));
}

TEST_CASE("cuda attention_backward: tokens split over several workspace chunks keep the CPU's += order") {
  // max_key_count 2^20 with 4 heads makes one token's workspace 32 MiB, so the
  // GPU processes 2 tokens per chunk: 24 prefill tokens sharing rows -> 12 chunks.
  check_backward(make_problem(KvFormat::e4m3, AttentionMath::fp8, 4, 2, 40, 50, prefill_ranges(), 91, (1 << 20) - 19));
  check_backward(make_problem(KvFormat::bf16, AttentionMath::bf16, 4, 2, 64, 50, prefill_ranges(), 92, (1 << 20) - 19));
}

}  // namespace
}  // namespace fp8rl::test
