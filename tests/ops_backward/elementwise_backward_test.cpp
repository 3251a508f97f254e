// The row-wise backward operations of the CPU backend (RMSNorm, RoPE,
// SwiGLU, embedding, log-softmax of selected tokens) against central finite
// differences of float64 forward references, with the loss L = sum(out * dy).
#include <cmath>
#include <limits>

#include "ops_backward/backward_test_support.h"

namespace fp8rl::test {
namespace {

// float64 RMSNorm of x [rows, dim] with weight [dim], dotted with g.
double rms_norm_loss(const std::vector<double>& x, const std::vector<double>& w, const std::vector<float>& g,
                     int64_t rows, int64_t dim, double eps) {
  double loss = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (int64_t i = 0; i < dim; ++i) ss += x[r * dim + i] * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) loss += x[r * dim + i] * inv * w[i] * g[r * dim + i];
  }
  return loss;
}

TEST_CASE("rms_norm_backward matches finite differences of a float64 RMSNorm, dweight accumulates") {
  const auto backend = make_cpu_backend(2);
  for (int64_t dim : {1, 17, 40}) {
    const int64_t rows = 5;
    const float eps = 1e-5f;
    const std::vector<float> x = random_floats(rows * dim, -2.0f, 2.0f, 21);
    const std::vector<float> w = random_floats(dim, 0.5f, 1.5f, 22);
    const std::vector<float> dy = random_floats(rows * dim, -1.0f, 1.0f, 23);
    std::vector<float> dx(x.size()), dw(static_cast<size_t>(dim), 0.25f);
    backend->rms_norm_backward(x.data(), w.data(), dy.data(), rows, dim, eps, dx.data(), dw.data());
    const std::vector<double> wd = to_double(w), xd = to_double(x);
    const auto ref_dx =
        finite_difference([&](const std::vector<double>& v) { return rms_norm_loss(v, wd, dy, rows, dim, eps); }, xd);
    auto ref_dw =
        finite_difference([&](const std::vector<double>& v) { return rms_norm_loss(xd, v, dy, rows, dim, eps); }, wd);
    for (double& v : ref_dw) v += 0.25;
    CAPTURE(dim);
    // FP32 arithmetic over a few dozen terms: errors of a few 1e-7 relative to
    // the size of the terms of dx, |w * dy| * inv (dx itself can be far
    // smaller: for dim 1 it is O(eps), all cancellation); the differences
    // themselves are good to ~1e-9.
    double term = 0.0, worst = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0.0;
      for (int64_t i = 0; i < dim; ++i) ss += xd[r * dim + i] * xd[r * dim + i];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
      for (int64_t i = 0; i < dim; ++i) {
        term = std::max(term, std::fabs(wd[i] * dy[r * dim + i]) * inv);
        worst = std::max(worst, std::fabs(dx[r * dim + i] - ref_dx[r * dim + i]));
      }
    }
    CHECK(worst / term < 1e-5);
    CHECK(relative_max_error(dw, ref_dw) < 1e-5);
  }
}

TEST_CASE("rms_norm_backward gives the same bits on 1 and 2 threads, and in place over dy") {
  const int64_t rows = 300, dim = 200;  // above the size at which the pool is used
  const std::vector<float> x = random_floats(rows * dim, -3.0f, 3.0f, 31);
  const std::vector<float> w = random_floats(dim, 0.5f, 1.5f, 32);
  const std::vector<float> dy = random_floats(rows * dim, -1.0f, 1.0f, 33);
  std::vector<std::vector<float>> dxs, dws;
  for (int threads : {1, 2, 3}) {
    const auto backend = make_cpu_backend(threads);
    std::vector<float> dx(x.size()), dw(static_cast<size_t>(dim), 0.0f);
    backend->rms_norm_backward(x.data(), w.data(), dy.data(), rows, dim, 1e-6f, dx.data(), dw.data());
    dxs.push_back(dx);
    dws.push_back(dw);
    std::vector<float> in_place = dy, dw2(static_cast<size_t>(dim), 0.0f);
    backend->rms_norm_backward(x.data(), w.data(), in_place.data(), rows, dim, 1e-6f, in_place.data(), dw2.data());
    CHECK(same_bits(in_place, dx));
    CHECK(same_bits(dw2, dw));
  }
  CHECK(same_bits(dxs[0], dxs[1]));
  CHECK(same_bits(dxs[0], dxs[2]));
  CHECK(same_bits(dws[0], dws[1]));
  CHECK(same_bits(dws[0], dws[2]));
}

TEST_CASE("rope_backward is the transpose of rope: finite differences and a round trip") {
  const auto backend = make_cpu_backend(1);
  const int64_t tokens = 3, heads = 2, head_dim = 6, half = 3, table_positions = 8;
  std::vector<float> cos(table_positions * half), sin(table_positions * half);
  for (int64_t p = 0; p < table_positions; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * std::pow(100.0, -static_cast<double>(i) / half);
      cos[p * half + i] = static_cast<float>(std::cos(angle));
      sin[p * half + i] = static_cast<float>(std::sin(angle));
    }
  const std::vector<int32_t> positions = {5, 0, 7};
  const std::vector<float> g = random_floats(tokens * heads * head_dim, -1.0f, 1.0f, 41);
  std::vector<float> dx = g;
  backend->rope_backward(dx.data(), positions.data(), tokens, heads, head_dim, cos.data(), sin.data(), table_positions);
  const auto loss = [&](const std::vector<double>& x) {
    double l = 0.0;
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t base = (t * heads + h) * head_dim;
          const double c = cos[positions[t] * half + i], s = sin[positions[t] * half + i];
          const double a = x[base + i], b = x[base + i + half];
          l += (a * c - b * s) * g[base + i] + (b * c + a * s) * g[base + i + half];
        }
    return l;
  };
  const auto ref = finite_difference(loss, std::vector<double>(g.size(), 0.3));
  CHECK(relative_max_error(dx, ref) < 1e-6);
  // rope then rope_backward returns the input up to FP32 rounding (cos^2 + sin^2 = 1).
  std::vector<float> x = g;
  backend->rope(x.data(), positions.data(), tokens, heads, head_dim, cos.data(), sin.data(), table_positions);
  backend->rope_backward(x.data(), positions.data(), tokens, heads, head_dim, cos.data(), sin.data(), table_positions);
  CHECK(relative_max_error(x, to_double(g)) < 1e-6);
}

TEST_CASE("swiglu_backward matches finite differences of silu(g) * u, also in place") {
  const auto backend = make_cpu_backend(2);
  const int64_t count = 200;
  std::vector<float> gate = random_floats(count, -12.0f, 12.0f, 51);
  gate[0] = 0.0f;
  gate[1] = -90.0f;  // exp overflows towards 0: silu' -> 0
  gate[2] = 90.0f;   // sigmoid 1: silu' -> 1
  const std::vector<float> up = random_floats(count, -2.0f, 2.0f, 52);
  const std::vector<float> dout = random_floats(count, -1.0f, 1.0f, 53);
  std::vector<float> dgate(count), dup(count);
  backend->swiglu_backward(gate.data(), up.data(), dout.data(), count, dgate.data(), dup.data());
  double worst_gate = 0.0, worst_up = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double g = gate[i], u = up[i], d = dout[i];
    const auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
    const double h = 1e-6 * std::max(1.0, std::fabs(g));
    const double ref_gate = (silu(g + h) - silu(g - h)) / (2.0 * h) * u * d;
    const double ref_up = silu(g) * d;
    // Relative to the size of the terms: exp_f32 and a handful of roundings.
    worst_gate = std::max(worst_gate, std::fabs(dgate[i] - ref_gate) / (std::fabs(u * d) + 1e-30));
    worst_up = std::max(worst_up, std::fabs(dup[i] - ref_up) / (std::fabs(ref_up) + 1e-30));
  }
  CHECK(worst_gate < 1e-5);
  CHECK(worst_up < 1e-5);
  std::vector<float> g2 = gate, u2 = up;
  backend->swiglu_backward(g2.data(), u2.data(), dout.data(), count, g2.data(), u2.data());
  CHECK(same_bits(g2, dgate));
  CHECK(same_bits(u2, dup));
}

TEST_CASE("embedding_backward adds dy rows into their ids' rows, in token order, on any thread count") {
  const int64_t vocab = 7, hidden = 5;
  const std::vector<int32_t> ids = {3, 0, 3, 6, 3};
  const int64_t count = static_cast<int64_t>(ids.size());
  const std::vector<float> dy = random_floats(count * hidden, -1.0f, 1.0f, 61);
  std::vector<float> dtable(vocab * hidden, 0.5f);
  make_cpu_backend(2)->embedding_backward(dy.data(), ids.data(), count, vocab, hidden, dtable.data());
  // Finite differences of out = table[ids], L = sum(out * dy), plus the initial 0.5.
  const auto loss = [&](const std::vector<double>& table) {
    double l = 0.0;
    for (int64_t t = 0; t < count; ++t)
      for (int64_t c = 0; c < hidden; ++c) l += table[ids[t] * hidden + c] * dy[t * hidden + c];
    return l;
  };
  auto ref = finite_difference(loss, std::vector<double>(vocab * hidden, 0.1));
  for (double& v : ref) v += 0.5;
  CHECK(relative_max_error(dtable, ref) < 1e-6);

  // Large enough for the pool: the same bits as the FP32 sum in token order.
  const int64_t big_vocab = 50, big_hidden = 3000, big_count = 40;
  std::vector<int32_t> big_ids(big_count);
  for (int64_t t = 0; t < big_count; ++t) big_ids[t] = static_cast<int32_t>((t * 7) % 11);
  const std::vector<float> big_dy = random_floats(big_count * big_hidden, -1.0f, 1.0f, 62);
  std::vector<float> expected(big_vocab * big_hidden, 0.0f);
  for (int64_t t = 0; t < big_count; ++t)
    for (int64_t c = 0; c < big_hidden; ++c) expected[big_ids[t] * big_hidden + c] += big_dy[t * big_hidden + c];
  for (int threads : {1, 2, 3}) {
    std::vector<float> out(big_vocab * big_hidden, 0.0f);
    make_cpu_backend(threads)->embedding_backward(big_dy.data(), big_ids.data(), big_count, big_vocab, big_hidden,
                                                  out.data());
    CAPTURE(threads);
    CHECK(same_bits(out, expected));
  }
}

// sum_r coef[r] * log softmax(logits[r] / T_r)[target_r] in float64.
double logprob_loss(const std::vector<double>& logits, int64_t rows, int64_t vocab, const std::vector<SamplingRow>& p,
                    const std::vector<int32_t>& targets, const std::vector<float>& coef) {
  double loss = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const double t = p[r].temperature;
    double m = -1e300;
    for (int64_t i = 0; i < vocab; ++i) m = std::max(m, logits[r * vocab + i] / t);
    double z = 0.0;
    for (int64_t i = 0; i < vocab; ++i) z += std::exp(logits[r * vocab + i] / t - m);
    loss += coef[r] * (logits[r * vocab + targets[r]] / t - m - std::log(z));
  }
  return loss;
}

TEST_CASE("log_softmax_backward matches finite differences of the log-probability, entropy of the softmax") {
  const int64_t rows = 3, vocab = 11;
  std::vector<float> logits = random_floats(rows * vocab, -4.0f, 4.0f, 71);
  logits[2 * vocab + 4] = -std::numeric_limits<float>::infinity();  // probability 0
  std::vector<SamplingRow> params(rows);
  params[0].temperature = 1.0f;
  params[1].temperature = 0.7f;
  params[1].top_k = 3;  // ignored
  params[2].temperature = 1.3f;
  params[2].top_p = 0.5f;  // ignored
  const std::vector<int32_t> targets = {0, 10, 5};
  const std::vector<float> coef = {1.0f, -0.5f, 2.0f};
  std::vector<float> dlogits(logits.size()), entropy(rows);
  make_cpu_backend(2)->log_softmax_backward(logits.data(), rows, vocab, params.data(), targets.data(), coef.data(),
                                            dlogits.data(), entropy.data());
  std::vector<double> x = to_double(logits);
  x[2 * vocab + 4] = -1e300;  // finite stand-in for -Inf in the differences
  const auto ref = finite_difference(
      [&](const std::vector<double>& v) { return logprob_loss(v, rows, vocab, params, targets, coef); }, x, 1e-5);
  CHECK(dlogits[2 * vocab + 4] == 0.0f);
  for (size_t i = 0; i < ref.size(); ++i)
    if (i != static_cast<size_t>(2 * vocab + 4)) CHECK(std::fabs(dlogits[i] - ref[i]) < 1e-7 * 4.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double t = params[r].temperature;
    double m = -1e300, z = 0.0, h = 0.0;
    for (int64_t i = 0; i < vocab; ++i) m = std::max(m, x[r * vocab + i] / t);
    for (int64_t i = 0; i < vocab; ++i) z += std::exp(x[r * vocab + i] / t - m);
    for (int64_t i = 0; i < vocab; ++i) {
      const double p = std::exp(x[r * vocab + i] / t - m) / z;
      if (p > 0.0) h -= p * std::log(p);
    }
    CHECK(std::fabs(entropy[r] - h) < 1e-6 * std::max(1.0, h));
  }
  // In place over the logits: the same bits.
  std::vector<float> in_place = logits, entropy2(rows);
  make_cpu_backend(1)->log_softmax_backward(in_place.data(), rows, vocab, params.data(), targets.data(), coef.data(),
                                            in_place.data(), entropy2.data());
  CHECK(same_bits(in_place, dlogits));
  CHECK(same_bits(entropy2, entropy));
}

TEST_CASE("log_softmax_backward gives the same bits on 1 and 2 threads") {
  const int64_t rows = 9, vocab = 5000;
  const std::vector<float> logits = random_floats(rows * vocab, -8.0f, 8.0f, 81);
  std::vector<SamplingRow> params(rows);
  std::vector<int32_t> targets(rows);
  std::vector<float> coef(rows);
  for (int64_t r = 0; r < rows; ++r) {
    params[r].temperature = 0.5f + 0.1f * static_cast<float>(r);
    targets[r] = static_cast<int32_t>(r * 311);
    coef[r] = 1.0f - 0.2f * static_cast<float>(r);
  }
  std::vector<float> d1(logits.size()), d2(logits.size()), e1(rows), e2(rows);
  make_cpu_backend(1)->log_softmax_backward(logits.data(), rows, vocab, params.data(), targets.data(), coef.data(),
                                            d1.data(), e1.data());
  make_cpu_backend(2)->log_softmax_backward(logits.data(), rows, vocab, params.data(), targets.data(), coef.data(),
                                            d2.data(), e2.data());
  CHECK(same_bits(d1, d2));
  CHECK(same_bits(e1, e2));
}

TEST_CASE("the row-wise backward operations refuse bad arguments") {
  const auto backend = make_cpu_backend(1);
  std::vector<float> a(64, 0.5f), b(64, 0.5f), c(64, 0.5f), d(64), e(64);
  const std::vector<int32_t> positions = {0, 1};
  const std::vector<float> table(16, 1.0f);
  // rms_norm_backward
  check_status([&] { backend->rms_norm_backward(a.data(), b.data(), c.data(), 2, 4, -1.0f, d.data(), e.data()); },
               Status::invalid_argument);
  check_status([&] { backend->rms_norm_backward(a.data(), b.data(), c.data(), 2, 0, 1e-5f, d.data(), e.data()); },
               Status::invalid_argument);
  check_status([&] { backend->rms_norm_backward(a.data(), b.data(), c.data(), 2, 4, 1e-5f, d.data(), nullptr); },
               Status::invalid_argument);
  backend->rms_norm_backward(nullptr, nullptr, nullptr, 0, 4, 1e-5f, nullptr, nullptr);  // no rows: no-op
  // rope_backward
  check_status([&] { backend->rope_backward(a.data(), positions.data(), 2, 1, 3, table.data(), table.data(), 4); },
               Status::invalid_argument);
  check_status([&] { backend->rope_backward(a.data(), positions.data(), 2, 1, 4, nullptr, table.data(), 4); },
               Status::invalid_argument);
  // swiglu_backward
  check_status([&] { backend->swiglu_backward(a.data(), b.data(), nullptr, 4, d.data(), e.data()); },
               Status::invalid_argument);
  check_status([&] { backend->swiglu_backward(a.data(), b.data(), c.data(), -1, d.data(), e.data()); },
               Status::invalid_argument);
  // embedding_backward
  const std::vector<int32_t> bad_ids = {0, 4};
  check_status([&] { backend->embedding_backward(a.data(), bad_ids.data(), 2, 4, 2, d.data()); },
               Status::invalid_argument);
  const std::vector<int32_t> negative_ids = {-1};
  check_status([&] { backend->embedding_backward(a.data(), negative_ids.data(), 1, 4, 2, d.data()); },
               Status::invalid_argument);
  check_status([&] { backend->embedding_backward(a.data(), positions.data(), 2, 0, 2, d.data()); },
               Status::invalid_argument);
  // log_softmax_backward
  std::vector<SamplingRow> params(2);
  const std::vector<int32_t> targets = {0, 3};
  const std::vector<float> coef = {1.0f, 1.0f};
  const auto call = [&](const float* logits) {
    backend->log_softmax_backward(logits, 2, 4, params.data(), targets.data(), coef.data(), d.data(), e.data());
  };
  call(a.data());  // valid
  params[1].temperature = 0.0f;
  check_status([&] { call(a.data()); }, Status::invalid_argument);
  params[1].temperature = 1.0f;
  const std::vector<int32_t> bad_targets = {0, 4};
  check_status(
      [&] {
        backend->log_softmax_backward(a.data(), 2, 4, params.data(), bad_targets.data(), coef.data(), d.data(),
                                      e.data());
      },
      Status::invalid_argument);
  std::vector<float> nan_logits(8, 0.0f);
  nan_logits[5] = std::nanf("");
  check_status([&] { call(nan_logits.data()); }, Status::non_finite);
  check_status(
      [&] {
        backend->log_softmax_backward(a.data(), 2, 4, params.data(), targets.data(), nullptr, d.data(), e.data());
      },
      Status::invalid_argument);
}

}  // namespace
}  // namespace fp8rl::test
