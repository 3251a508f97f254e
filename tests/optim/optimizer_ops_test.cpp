// The optimizer and calibration operations of the CPU backend (kernels/backend.h):
//   adamw_update      bitwise against AdamW::step (itself bitwise torch.optim.AdamW)
//   sum_of_squares    against an exact sum (Shewchuk's fsum) within the rounding
//                     bound of its order, against a literal transcription of
//                     reduction_order.h bit for bit, and bitwise across thread counts
//   first_non_finite  NaN / Inf at chosen indices, a scale that overflows
//   row_abs_max       against the plain std::max / std::fabs loop, with NaN, -0, Inf
//   clip_for_norm     of sqrt(sum_of_squares) over a flat arena: clip_grad_norm's decision
// and the refusals (null pointers, negative counts) with their messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/train/adamw.h"
#include "core/train/grad_clip.h"
#include "kernels/cpu/cpu_backend.h"

namespace {

using namespace fp8rl;
using train::AdamW;
using train::AdamWOptions;
using train::ParamSlot;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kChunk = 4096;  // reduction_order.h's chunk, written out: the test must not borrow the definition

const std::vector<int> kThreadCounts = {1, 2, 3, 7};

// One CPU backend per thread count for the whole run.
Backend& cpu(int threads) {
  static std::vector<std::unique_ptr<Backend>> backends(8);
  std::unique_ptr<Backend>& b = backends[static_cast<size_t>(threads)];
  if (!b) b = make_cpu_backend(threads);
  return *b;
}

uint32_t bits_of(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}
uint64_t bits_of(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// Index of the first element that differs bit for bit, or -1.
int64_t first_difference(const std::vector<float>& a, const float* b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (bits_of(a[i]) != bits_of(b[i])) return static_cast<int64_t>(i);
  return -1;
}

// Normal values scaled by 2^k, k uniform in [-spread, spread] per element.
std::vector<float> random_values(int64_t count, uint32_t seed, int spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-spread, spread);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = std::ldexp(normal(rng), exponent(rng));
  return v;
}

std::string thrown_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    return e.what();
  }
  return "(no exception)";
}

// ---------------------------------------------------------------------------
// adamw_update

TEST_CASE("adamw_update: bitwise AdamW::step over several steps, decay on and off, grad_scale != 1") {
  AdamWOptions o;
  o.beta1 = 0.9;
  o.beta2 = 0.995;
  o.eps = 1e-7;
  o.weight_decay = 0.1;
  // A large decayed slot (the backend spreads it over the pool) and a small undecayed one.
  const std::vector<int64_t> sizes = {70001, 1001};
  const std::vector<bool> decays = {true, false};
  for (const int threads : {1, 3}) {
    Backend& backend = cpu(threads);
    std::vector<std::vector<float>> host_params, params, m, v;
    for (size_t k = 0; k < sizes.size(); ++k) {
      host_params.push_back(random_values(sizes[k], 10 + static_cast<uint32_t>(k), 3));
      params.push_back(host_params.back());
      m.emplace_back(static_cast<size_t>(sizes[k]), 0.0f);
      v.emplace_back(static_cast<size_t>(sizes[k]), 0.0f);
    }
    AdamW opt(o, {static_cast<size_t>(sizes[0]), static_cast<size_t>(sizes[1])});
    const AdamWHyperparameters hyper{o.beta1, o.beta2, o.eps, o.weight_decay};
    const float grad_scales[] = {1.0f, 0.37f, 1.0f, 2.5f, 0.003f};
    for (int step = 1; step <= 5; ++step) {
      const double lr = 1e-3 * step;
      const float scale = grad_scales[step - 1];
      std::vector<std::vector<float>> grads;
      std::vector<ParamSlot> slots;
      for (size_t k = 0; k < sizes.size(); ++k) {
        grads.push_back(random_values(sizes[k], 100 * static_cast<uint32_t>(step) + static_cast<uint32_t>(k), 6));
        slots.push_back({host_params[k].data(), grads[k].data(), grads[k].size(), decays[k]});
      }
      REQUIRE_FALSE(opt.step(slots, lr, scale).skipped);
      for (size_t k = 0; k < sizes.size(); ++k) {
        const AdamWScalars s = adamw_scalars(hyper, lr, step, scale, decays[k]);
        backend.adamw_update(params[k].data(), grads[k].data(), m[k].data(), v[k].data(), sizes[k], s);
        CAPTURE(threads);
        CAPTURE(step);
        CAPTURE(k);
        CHECK(first_difference(params[k], host_params[k].data()) == -1);
        CHECK(first_difference(m[k], opt.exp_avg(k).data) == -1);
        CHECK(first_difference(v[k], opt.exp_avg_sq(k).data) == -1);
      }
    }
  }
}

TEST_CASE("adamw_update: weight decay 0 is no decay, and the decay flag changes the parameters") {
  const std::vector<float> p0 = random_values(300, 1, 2), g = random_values(300, 2, 2);
  const auto run = [&](double weight_decay, bool decay) {
    std::vector<float> p = p0, m(p0.size(), 0.0f), v(p0.size(), 0.0f);
    const AdamWScalars s = adamw_scalars({0.9, 0.999, 1e-8, weight_decay}, 0.01, 1, 1.0f, decay);
    cpu(2).adamw_update(p.data(), g.data(), m.data(), v.data(), static_cast<int64_t>(p.size()), s);
    return p;
  };
  CHECK(first_difference(run(0.0, true), run(0.0, false).data()) == -1);
  CHECK(first_difference(run(0.5, false), run(0.0, false).data()) == -1);
  CHECK(first_difference(run(0.5, true), run(0.0, false).data()) != -1);
}

// ---------------------------------------------------------------------------
// sum_of_squares

// The exact sum of doubles, rounded once (Shewchuk's algorithm, as Python's
// math.fsum; the final rounding is faithful, which the bound below absorbs).
double fsum(const std::vector<double>& terms) {
  std::vector<double> partials;
  for (double x : terms) {
    size_t n = 0;
    for (double y : partials) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double hi = x + y;
      const double lo = y - (hi - x);
      if (lo != 0.0) partials[n++] = lo;
      x = hi;
    }
    partials.resize(n);
    partials.push_back(x);
  }
  double sum = 0.0;
  for (auto it = partials.rbegin(); it != partials.rend(); ++it) sum += *it;
  return sum;
}

// reduction_order.h written out from its comment, without its code.
double pairwise(std::vector<double> v) {
  size_t p = 1;
  while (p < v.size()) p *= 2;
  v.resize(p, 0.0);
  for (; p > 1; p /= 2)
    for (size_t j = 0; j < p / 2; ++j) v[j] = v[2 * j] + v[2 * j + 1];
  return v[0];
}

double documented_order(const std::vector<float>& x) {
  std::vector<double> chunk_sums;
  for (size_t c0 = 0; c0 < x.size(); c0 += kChunk) {
    std::vector<double> lane(256, 0.0);
    for (size_t j = 0; j < 256; ++j)
      for (size_t k = 0; k < 16 && c0 + j + 256 * k < x.size(); ++k) {
        const double d = x[c0 + j + 256 * k];
        lane[j] += d * d;
      }
    chunk_sums.push_back(pairwise(lane));
  }
  return chunk_sums.empty() ? 0.0 : pairwise(chunk_sums);
}

// Roundings any one term goes through in that order: 16 lane additions, 8
// levels of the lane tree, ceil(log2(chunks)) of the chunk tree.
int rounding_depth(int64_t count) {
  int depth = 16 + 8;
  for (int64_t chunks = (count + kChunk - 1) / kChunk, p = 1; p < chunks; p *= 2) ++depth;
  return depth;
}

TEST_CASE(
    "sum_of_squares: exact within its rounding bound, the documented order, the same bits for 1, 2, 3, 7 threads") {
  for (const int64_t count :
       {int64_t{0}, int64_t{1}, int64_t{255}, kChunk - 1, kChunk, kChunk + 1, int64_t{1000003}, int64_t{8400001}}) {
    const std::vector<float> x = random_values(count, static_cast<uint32_t>(count % 1000), 20);
    std::vector<double> terms;
    for (const float v : x) terms.push_back(static_cast<double>(v) * static_cast<double>(v));  // exact
    const double exact = fsum(terms);
    const double result = cpu(1).sum_of_squares(x.data(), count);
    CAPTURE(count);
    if (count == 0) CHECK(bits_of(result) == bits_of(0.0));
    // A sum of non-negative terms each rounded at most D times: |error| <= D u / (1 - D u) * exact.
    const double depth = rounding_depth(count), u = std::ldexp(1.0, -53);
    CHECK(std::fabs(result - exact) <= depth * u / (1.0 - depth * u) * exact);
    CHECK(bits_of(result) == bits_of(documented_order(x)));
    for (const int threads : kThreadCounts) {
      CAPTURE(threads);
      CHECK(bits_of(cpu(threads).sum_of_squares(x.data(), count)) == bits_of(result));
    }
  }
}

TEST_CASE("sum_of_squares: -0, subnormals and the extremes of float are exact terms, Inf and NaN propagate") {
  std::vector<float> x = {-0.0f, 1e-45f, -1e-45f, 3.4028235e38f, -3.4028235e38f};
  const double max = static_cast<double>(3.4028235e38f);  // FLT_MAX, exactly
  CHECK(cpu(2).sum_of_squares(x.data(), 1) == 0.0);
  CHECK(cpu(2).sum_of_squares(x.data(), 3) == 2.0 * std::ldexp(1.0, -298));
  CHECK(cpu(2).sum_of_squares(x.data(), 5) == 2.0 * max * max);  // the subnormal squares are absorbed
  std::vector<float> y = random_values(3 * kChunk + 5, 3, 2);
  y[5000] = -kInf;
  CHECK(cpu(3).sum_of_squares(y.data(), static_cast<int64_t>(y.size())) == std::numeric_limits<double>::infinity());
  y[7] = kNan;
  CHECK(std::isnan(cpu(3).sum_of_squares(y.data(), static_cast<int64_t>(y.size()))));
}

TEST_CASE("clip_for_norm: the square root of sum_of_squares over a flat arena clips as clip_grad_norm does") {
  // Three tensors in one arena, as the trainer will keep them.
  const std::vector<int64_t> sizes = {5000, 17, 30000};
  const std::vector<float> arena = random_values(35017, 8, 2);
  std::vector<float> params(arena.size(), 0.0f);
  std::vector<ParamSlot> slots;
  for (int64_t offset = 0, k = 0; k < 3; offset += sizes[static_cast<size_t>(k)], ++k)
    slots.push_back(
        {params.data() + offset, arena.data() + offset, static_cast<size_t>(sizes[static_cast<size_t>(k)])});
  const double norm = std::sqrt(cpu(3).sum_of_squares(arena.data(), static_cast<int64_t>(arena.size())));
  for (const double max_norm : {1.0, 1e6}) {
    const train::GradClipResult host = train::clip_grad_norm(slots, max_norm);
    const train::GradClipResult flat = train::clip_for_norm(norm, max_norm);
    // Only the summation order differs; global_grad_norm adds its 35017 terms one after the
    // other, so its sum is within n * 2^-53 (4e-12) relative, and the norm within half that.
    CHECK(std::fabs(flat.norm - host.norm) <= 4e-12 * host.norm);
    CHECK(flat.clipped == host.clipped);
    CHECK(flat.finite);
    const train::GradClipResult same = train::clip_for_norm(host.norm, max_norm);
    CHECK(same.scale == host.scale);
    CHECK(same.clipped == host.clipped);
  }
  CHECK_FALSE(train::clip_for_norm(std::numeric_limits<double>::infinity(), 1.0).finite);
  CHECK(train::clip_for_norm(std::nan(""), 1.0).scale == 1.0f);
  CHECK(thrown_message([] { train::clip_for_norm(1.0, 0.0); }).find("max_norm") != std::string::npos);
}

// ---------------------------------------------------------------------------
// first_non_finite

TEST_CASE("first_non_finite: the smallest bad index for any thread count, -1 when none") {
  const int64_t count = 100003;  // several parts for the pool
  const std::vector<float> clean = random_values(count, 5, 10);
  for (const int threads : kThreadCounts) {
    Backend& b = cpu(threads);
    CAPTURE(threads);
    CHECK(b.first_non_finite(clean.data(), count, 1.0f) == -1);
    CHECK(b.first_non_finite(clean.data(), count, 0.25f) == -1);
    for (const int64_t at : {int64_t{0}, int64_t{1}, kChunk - 1, kChunk, int64_t{50001}, count - 1})
      for (const float bad : {kNan, kInf, -kInf}) {
        std::vector<float> x = clean;
        x[static_cast<size_t>(at)] = bad;
        if (at + 7 < count) x[static_cast<size_t>(at + 7)] = kNan;  // a later one does not matter
        CAPTURE(at);
        CHECK(b.first_non_finite(x.data(), count, 1.0f) == at);
        CHECK(b.first_non_finite(x.data(), count, 0.5f) == at);
        CHECK(b.first_non_finite(x.data(), at, 1.0f) == -1);  // just before it
      }
  }
}

TEST_CASE("first_non_finite: a scale that overflows a finite value reports it") {
  std::vector<float> x = random_values(40000, 6, 1);
  x[777] = 3.0e38f;
  x[30000] = -2.0e38f;
  for (const int threads : kThreadCounts) {
    Backend& b = cpu(threads);
    CHECK(b.first_non_finite(x.data(), 40000, 1.0f) == -1);
    CHECK(b.first_non_finite(x.data(), 40000, 1.5f) == 777);  // 4.5e38 overflows
    CHECK(b.first_non_finite(x.data(), 777, 1.5f) == -1);
    CHECK(b.first_non_finite(x.data(), 40000, 1.2f) == 777);                      // 3.6e38 too
    CHECK(b.first_non_finite(x.data() + 778, 40000 - 778, 2.0f) == 30000 - 778);  // -4e38 overflows
  }
}

// ---------------------------------------------------------------------------
// row_abs_max

std::vector<float> plain_row_abs_max(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0.0f;
    for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(x[static_cast<size_t>(r * cols + c)]));
    out.push_back(amax);
  }
  return out;
}

TEST_CASE("row_abs_max: the plain std::max(amax, fabs(v)) loop, NaN ignored, -0 and Inf kept as that loop keeps them") {
  const float specials[] = {kNan, -kNan, -0.0f, kInf, -kInf, 1e-45f, -3.4028235e38f};
  for (const int64_t rows : {1, 3, 200})
    for (const int64_t cols : {1, 5, 33, 1000}) {
      std::vector<float> x = random_values(rows * cols, 7, 8);
      std::mt19937 rng(static_cast<uint32_t>(rows * cols));
      std::uniform_int_distribution<size_t> pick(0, std::size(specials) - 1);
      for (size_t i = 3; i < x.size(); i += 1 + rng() % 11) x[i] = specials[pick(rng)];
      const std::vector<float> expected = plain_row_abs_max(x, rows, cols);
      for (const int threads : kThreadCounts) {
        std::vector<float> out(static_cast<size_t>(rows), -1.0f);
        cpu(threads).row_abs_max(x.data(), rows, cols, out.data());
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(threads);
        CHECK(first_difference(expected, out.data()) == -1);
      }
    }
  // Rows of only NaN, only -0, NaN before and after Inf.
  const std::vector<float> x = {kNan, -kNan, kNan, -0.0f, -0.0f, -0.0f, kNan, -kInf, kNan};
  std::vector<float> out(3);
  cpu(2).row_abs_max(x.data(), 3, 3, out.data());
  CHECK(bits_of(out[0]) == bits_of(0.0f));
  CHECK(bits_of(out[1]) == bits_of(0.0f));
  CHECK(out[2] == kInf);
}

// ---------------------------------------------------------------------------
// Refusals

TEST_CASE("optimizer ops: null pointers, negative counts and bad shapes are refused with their messages") {
  Backend& b = cpu(2);
  float a[4] = {}, c[4] = {}, d[4] = {}, e[4] = {};
  const AdamWScalars s = adamw_scalars({0.9, 0.999, 1e-8, 0.0}, 1e-3, 1, 1.0f, false);
  CHECK(thrown_message([&] { b.adamw_update(a, c, d, e, -1, s); }) ==
        "adamw_update: count must be non-negative, got -1");
  CHECK(thrown_message([&] { b.adamw_update(a, nullptr, d, e, 4, s); }) == "adamw_update: null pointer");
  CHECK(thrown_message([&] { b.adamw_update(a, c, d, nullptr, 4, s); }) == "adamw_update: null pointer");
  AdamWScalars bad = s;
  bad.eps = kNan;
  CHECK(thrown_message([&] { b.adamw_update(a, c, d, e, 4, bad); }) == "adamw_update: the scalars must be finite");
  CHECK(thrown_message([&] { b.sum_of_squares(nullptr, 4); }) == "sum_of_squares: null pointer");
  CHECK(thrown_message([&] { b.sum_of_squares(a, -3); }) == "sum_of_squares: count must be non-negative, got -3");
  CHECK(thrown_message([&] { b.first_non_finite(nullptr, 1, 1.0f); }) == "first_non_finite: null pointer");
  CHECK(thrown_message([&] { b.first_non_finite(a, -1, 1.0f); }) ==
        "first_non_finite: count must be non-negative, got -1");
  CHECK(thrown_message([&] { b.row_abs_max(nullptr, 2, 2, a); }) == "row_abs_max: null pointer");
  CHECK(thrown_message([&] { b.row_abs_max(a, 2, 2, nullptr); }) == "row_abs_max: null pointer");
  CHECK(thrown_message([&] { b.row_abs_max(a, -1, 2, c); }) == "row_abs_max: rows must be non-negative, got -1");
  CHECK(thrown_message([&] { b.row_abs_max(a, 2, 0, c); }) == "row_abs_max: cols must be positive, got 0");
  // Nothing to do: the pointers are not looked at.
  b.adamw_update(nullptr, nullptr, nullptr, nullptr, 0, s);
  CHECK(b.sum_of_squares(nullptr, 0) == 0.0);
  CHECK(b.first_non_finite(nullptr, 0, 1.0f) == -1);
  b.row_abs_max(nullptr, 0, 4, nullptr);
}

}  // namespace
