// The row-wise transformer operations of the CPU backend against float64
// references: embedding, RMSNorm, RoPE, SwiGLU (and the exp it uses), add,
// add_bias, BF16 rounding, row gathering and the KV-cache store.
#include <cmath>
#include <limits>

#include "kernels/common/exp_math.h"
#include "ops/ops_test_support.h"

namespace fp8rl::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Distance from x to the exact value e in units of the float spacing at e.
double ulp_error(float x, double e) {
  const double spacing = std::ldexp(1.0, std::max(std::ilogb(static_cast<float>(e)), -126) - 23);
  return std::fabs(static_cast<double>(x) - e) / spacing;
}

TEST_CASE("exp_f32 is within 2 ulp of exp over the float range, with exact special values") {
  double worst = 0.0;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-103.0f, 88.7f);
  for (int i = 0; i < 200000; ++i) {
    const float x = i < 100000 ? dist(rng) : -20.0f + 40.0f * static_cast<float>(i - 100000) / 100000.0f;
    const double e = std::exp(static_cast<double>(x));
    worst = std::max(worst, ulp_error(exp_f32(x), e));
  }
  CHECK(worst <= 2.0);
  CHECK(exp_f32(0.0f) == 1.0f);
  CHECK(exp_f32(-kInf) == 0.0f);
  CHECK(exp_f32(-200.0f) == 0.0f);
  CHECK(exp_f32(kInf) == kInf);
  CHECK(exp_f32(100.0f) == kInf);
  CHECK(std::isnan(exp_f32(std::nanf(""))));
}

TEST_CASE("embedding decodes the BF16 rows of the ids") {
  const auto backend = make_cpu_backend(2);
  const int64_t vocab = 50, hidden = 70;
  std::vector<uint16_t> table(vocab * hidden);
  for (size_t i = 0; i < table.size(); ++i) table[i] = bf16_nearest(std::sin(static_cast<float>(i)) * 3.0f);
  const std::vector<int32_t> ids = {3, 0, 49, 3, 17};
  std::vector<float> out(ids.size() * hidden);
  backend->embedding(table.data(), vocab, hidden, ids.data(), static_cast<int64_t>(ids.size()), out.data());
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t j = 0; j < hidden; ++j)
      CHECK(out[i * hidden + j] == bf16_value(table[static_cast<size_t>(ids[i] * hidden + j)]));
}

TEST_CASE("rms_norm matches a float64 RMSNorm, also in place") {
  for (int threads : {1, 2}) {
    const auto backend = make_cpu_backend(threads);
    for (int64_t dim : {1, 15, 16, 17, 576, 1000}) {
      const int64_t rows = 70;
      const std::vector<float> x = random_floats(rows * dim, -4.0f, 4.0f, 11);
      const std::vector<float> w = random_floats(dim, 0.5f, 1.5f, 12);
      const float eps = 1e-5f;
      std::vector<float> out(x.size()), in_place = x;
      backend->rms_norm(x.data(), w.data(), rows, dim, eps, out.data());
      backend->rms_norm(in_place.data(), w.data(), rows, dim, eps, in_place.data());
      CHECK(in_place == out);
      double worst = 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0.0;
        for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
        const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
        for (int64_t i = 0; i < dim; ++i) {
          const double ref = x[r * dim + i] * inv * w[i];
          worst = std::max(worst, std::fabs(out[r * dim + i] - ref) / (std::fabs(ref) + 1e-30));
        }
      }
      CAPTURE(dim);
      CHECK(worst < 2e-6);  // a few roundings of 2^-24 each, and the sum of squares
    }
  }
}

TEST_CASE("rope rotates the (i, i + d/2) pairs by the table angles") {
  const auto backend = make_cpu_backend(2);
  const int64_t tokens = 40, heads = 3, head_dim = 64, half = head_dim / 2, table_positions = 100;
  std::vector<float> cos(table_positions * half), sin(table_positions * half);
  for (int64_t p = 0; p < table_positions; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / head_dim);
      cos[p * half + i] = static_cast<float>(std::cos(angle));
      sin[p * half + i] = static_cast<float>(std::sin(angle));
    }
  std::vector<int32_t> positions(tokens);
  for (int64_t t = 0; t < tokens; ++t) positions[t] = static_cast<int32_t>((t * 37) % table_positions);
  const std::vector<float> x0 = random_floats(tokens * heads * head_dim, -2.0f, 2.0f, 21);
  std::vector<float> x = x0;
  backend->rope(x.data(), positions.data(), tokens, heads, head_dim, cos.data(), sin.data(), table_positions);
  double worst = 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const int64_t base = (t * heads + h) * head_dim;
        const double c = cos[positions[t] * half + i], s = sin[positions[t] * half + i];
        const double a = x0[base + i], b = x0[base + i + half];
        const double magnitude = std::hypot(a, b) + 1e-30;
        worst = std::max(worst, std::fabs(x[base + i] - (a * c - b * s)) / magnitude);
        worst = std::max(worst, std::fabs(x[base + i + half] - (b * c + a * s)) / magnitude);
      }
  CHECK(worst < 4e-7);
  // Position 0 (cos 1, sin 0) leaves a head unchanged.
  std::vector<float> y = x0;
  const std::vector<int32_t> zero(tokens, 0);
  backend->rope(y.data(), zero.data(), tokens, heads, head_dim, cos.data(), sin.data(), table_positions);
  CHECK(y == x0);
}

TEST_CASE("swiglu is silu(gate) * up within a few ulp") {
  const auto backend = make_cpu_backend(2);
  const int64_t count = 100003;
  const std::vector<float> gate = random_floats(count, -30.0f, 30.0f, 31), up = random_floats(count, -2.0f, 2.0f, 32);
  std::vector<float> out(count);
  backend->swiglu(gate.data(), up.data(), count, out.data());
  double worst = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double g = gate[i], ref = g / (1.0 + std::exp(-g)) * up[i];
    worst = std::max(worst, std::fabs(out[i] - ref) / (std::fabs(ref) + 1e-30));
  }
  CHECK(worst < 1e-6);
  const float big[2] = {-200.0f, 200.0f}, one[2] = {1.0f, 1.0f};
  float tail[2];
  backend->swiglu(big, one, 2, tail);
  CHECK(tail[0] == -0.0f);
  CHECK(tail[1] == 200.0f);
}

TEST_CASE("add, add_bias, to_bf16 and gather_rows") {
  const auto backend = make_cpu_backend(2);
  const int64_t rows = 300, cols = 130;
  const std::vector<float> a = random_floats(rows * cols, -1e3f, 1e3f, 41),
                           b = random_floats(rows * cols, -1.0f, 1.0f, 42);
  std::vector<float> sum = a;
  backend->add(sum.data(), b.data(), rows * cols);
  for (size_t i = 0; i < a.size(); ++i) CHECK(sum[i] == a[i] + b[i]);

  std::vector<float> biased = a;
  backend->add_bias(biased.data(), b.data(), rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) CHECK(biased[r * cols + c] == a[r * cols + c] + b[c]);

  std::vector<float> values = random_floats(rows * cols, -1e30f, 1e30f, 43);
  values[0] = kInf;
  values[1] = -kInf;
  values[2] = std::nanf("");
  values[3] = 3.4028235e38f;  // rounds up to Inf in BF16
  std::vector<uint16_t> bits(values.size());
  backend->to_bf16(values.data(), static_cast<int64_t>(values.size()), bits.data());
  CHECK(bits[0] == 0x7F80);
  CHECK(bits[1] == 0xFF80);
  CHECK(std::isnan(bf16_value(bits[2])));
  CHECK(bits[3] == 0x7F80);
  for (size_t i = 4; i < values.size(); ++i) CHECK(bits[i] == bf16_nearest(values[i]));

  const std::vector<int64_t> picks = {5, 0, 299, 5};
  std::vector<float> gathered(picks.size() * cols);
  backend->gather_rows(a.data(), cols, picks.data(), static_cast<int64_t>(picks.size()), gathered.data());
  for (size_t i = 0; i < picks.size(); ++i)
    for (int64_t c = 0; c < cols; ++c) CHECK(gathered[i * cols + c] == a[picks[i] * cols + c]);
}

TEST_CASE("kv_store writes BF16 or saturating E4M3 codes into the cache rows") {
  const auto backend = make_cpu_backend(2);
  const int64_t tokens = 9, kv_dim = 192, cache_rows = 20;
  std::vector<float> source = random_floats(tokens * kv_dim, -8.0f, 8.0f, 51);
  source[0] = std::nanf("");
  source[1] = kInf;
  source[2] = -1e6f;
  const std::vector<int64_t> rows = {19, 0, 3, 4, 5, 11, 12, 13, 7};
  KvStoreArgs args;
  args.source = source.data();
  args.cache_rows = rows.data();
  args.tokens = tokens;
  args.kv_dim = kv_dim;

  std::vector<uint16_t> bf16_cache(cache_rows * kv_dim, 0x1234);
  args.format = KvFormat::bf16;
  args.cache = bf16_cache.data();
  backend->kv_store(args);
  CHECK(std::isnan(bf16_value(bf16_cache[rows[0] * kv_dim])));
  CHECK(bf16_cache[rows[0] * kv_dim + 1] == 0x7F80);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = (t == 0 ? 2 : 0); j < kv_dim; ++j)
      CHECK(bf16_cache[rows[t] * kv_dim + j] == bf16_nearest(source[t * kv_dim + j]));
  CHECK(bf16_cache[kv_dim * 1] == 0x1234);  // rows not named stay untouched

  std::vector<uint8_t> fp8_cache(cache_rows * kv_dim, 0x11);
  args.format = KvFormat::e4m3;
  args.scale = 8.0f / 448.0f;
  args.cache = fp8_cache.data();
  backend->kv_store(args);
  CHECK((fp8_cache[rows[0] * kv_dim] & 0x7F) == 0x7F);  // NaN stays NaN
  CHECK(fp8_cache[rows[0] * kv_dim + 1] == 0x7E);       // +Inf saturates to +448
  CHECK(fp8_cache[rows[0] * kv_dim + 2] == 0xFE);       // -1e6 saturates to -448
  double worst = 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = (t == 0 ? 3 : 0); j < kv_dim; ++j) {
      const float v = source[t * kv_dim + j];
      const uint8_t code = fp8_cache[rows[t] * kv_dim + j];
      CHECK(code == e4m3_of(v, args.scale));
      worst =
          std::max(worst, std::fabs(e4m3_value(code) * args.scale - v) / (std::fabs(v) + 8.0 * std::ldexp(1.0, -9)));
    }
  CHECK(worst <= 1.0 / 16.0);  // half an E4M3 ulp: 2^-4 relative
  CHECK(fp8_cache[kv_dim * 1] == 0x11);
}

TEST_CASE("row-wise operations refuse bad arguments and do nothing for zero rows") {
  const auto backend = make_cpu_backend(1);
  float x[4] = {}, w[4] = {};
  const int32_t ids[1] = {0};
  const uint16_t table[4] = {};
  check_status([&] { backend->rms_norm(x, w, 1, 0, 1e-5f, x); }, Status::invalid_argument);
  check_status([&] { backend->rms_norm(x, nullptr, 1, 4, 1e-5f, x); }, Status::invalid_argument);
  check_status([&] { backend->rms_norm(x, w, -1, 4, 1e-5f, x); }, Status::invalid_argument);
  check_status([&] { backend->embedding(table, 0, 4, ids, 1, x); }, Status::invalid_argument);
  const int32_t positions[1] = {0};
  check_status([&] { backend->rope(x, positions, 1, 1, 3, w, w, 1); }, Status::invalid_argument);
  check_status([&] { backend->swiglu(x, nullptr, 4, x); }, Status::invalid_argument);
  check_status([&] { backend->add(x, x, -2); }, Status::invalid_argument);
  check_status([&] { backend->add_bias(x, w, 1, 0); }, Status::invalid_argument);
  KvStoreArgs kv;
  kv.source = x;
  const int64_t rows[1] = {0};
  kv.cache_rows = rows;
  kv.cache = x;
  kv.tokens = 1;
  kv.kv_dim = 4;
  kv.format = KvFormat::e4m3;
  kv.scale = 0.0f;
  check_status([&] { backend->kv_store(kv); }, Status::invalid_argument);
  backend->rms_norm(nullptr, nullptr, 0, 4, 1e-5f, nullptr);  // zero rows: nothing to do
  backend->add(nullptr, nullptr, 0);
}

}  // namespace
}  // namespace fp8rl::test
