// core/train AdamW: one step against the formulas evaluated in double, the
// weight-decay flag, the non-finite skip (bit-identical state), state copied
// out and back in continuing bit-identically, and argument validation.
#include "core/train/adamw.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/error.h"

namespace {

using namespace fp8rl::train;
using fp8rl::Error;
using fp8rl::Status;

template <typename F>
void check_invalid(F&& f) {
  try {
    f();
    FAIL("expected Error(invalid_argument)");
  } catch (const Error& e) {
    CHECK(e.status() == Status::invalid_argument);
    CHECK(std::strlen(e.what()) > 0);
  }
}

bool same_bits(const std::vector<float>& a, const float* b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(float)) == 0;
}

struct TwoSlots {
  std::vector<float> w{0.5f, -1.25f, 2.0f, 0.0f, 3.0f, -0.75f};  // decayed "matrix"
  std::vector<float> b{0.1f, -0.2f, 0.3f};                       // undecayed "bias"
  std::vector<float> gw{0.01f, -0.3f, 1.5f, 0.0f, -2.0f, 0.25f};
  std::vector<float> gb{-0.05f, 0.4f, 1e-9f};
  std::vector<ParamSlot> slots() {
    return {{w.data(), gw.data(), w.size(), true}, {b.data(), gb.data(), b.size(), false}};
  }
  std::vector<size_t> sizes() const { return {w.size(), b.size()}; }
};

TEST_CASE("adamw: first step matches the formulas in double") {
  TwoSlots t;
  const std::vector<float> w0 = t.w, b0 = t.b;
  AdamWOptions o;
  o.beta1 = 0.9;
  o.beta2 = 0.99;
  o.eps = 1e-6;
  o.weight_decay = 0.05;
  AdamW opt(o, t.sizes());
  const double lr = 0.01;
  const AdamWStepResult r = opt.step(t.slots(), lr);
  CHECK_FALSE(r.skipped);
  CHECK(r.step_count == 1);
  CHECK(opt.step_count() == 1);
  auto expect = [&](const std::vector<float>& p0, const std::vector<float>& g, const std::vector<float>& p1,
                    size_t slot, bool decay) {
    const FloatSpan m = opt.exp_avg(slot), v = opt.exp_avg_sq(slot);
    for (size_t i = 0; i < p0.size(); ++i) {
      const double gd = g[i];
      const double md = (1 - o.beta1) * gd, vd = (1 - o.beta2) * gd * gd;
      const double denom = std::sqrt(vd) / std::sqrt(1 - o.beta2) + o.eps;  // = |g| + eps
      const double pd = p0[i] * (decay ? 1 - lr * o.weight_decay : 1.0) - lr / (1 - o.beta1) * md / denom;
      CHECK(m.data[i] == doctest::Approx(md).epsilon(1e-6));
      CHECK(v.data[i] == doctest::Approx(vd).epsilon(1e-6));
      CHECK(p1[i] == doctest::Approx(pd).epsilon(1e-6));
      // the first bias-corrected step moves each weight by lr * g / (|g| + eps)
      const double moved = p0[i] * (decay ? 1 - lr * o.weight_decay : 1.0) - p1[i];
      CHECK(moved == doctest::Approx(lr * gd / (std::fabs(gd) + o.eps)).epsilon(1e-4).scale(1e-3));
    }
  };
  expect(w0, t.gw, t.w, 0, true);
  expect(b0, t.gb, t.b, 1, false);
}

TEST_CASE("adamw: second step matches the recurrences in double") {
  TwoSlots t;
  AdamWOptions o;  // defaults: 0.9, 0.999, 1e-8, 0.01
  AdamW opt(o, t.sizes());
  std::vector<double> p(t.w.begin(), t.w.end()), m(p.size(), 0.0), v(p.size(), 0.0);
  const double lrs[2] = {1e-3, 2e-3};
  const std::vector<float> g2{0.2f, 0.1f, -1.0f, 0.5f, -1.5f, 0.0f};
  for (int s = 0; s < 2; ++s) {
    const std::vector<float>& g = s == 0 ? t.gw : g2;
    std::vector<ParamSlot> slots = t.slots();
    slots[0].grad = g.data();
    opt.step(slots, lrs[s]);
    const int step = s + 1;
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - lrs[s] * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * double(g[i]) * g[i];
      const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(o.beta2, step)) + o.eps;
      p[i] -= lrs[s] / (1 - std::pow(o.beta1, step)) * m[i] / denom;
    }
  }
  for (size_t i = 0; i < p.size(); ++i) CHECK(t.w[i] == doctest::Approx(p[i]).epsilon(1e-6).scale(1e-3));
}

TEST_CASE("adamw: weight decay applies only to slots flagged decay") {
  std::vector<float> a{1.0f, -2.0f, 4.0f}, b{1.0f, -2.0f, 4.0f};
  const std::vector<float> zero(3, 0.0f);
  AdamWOptions o;
  o.weight_decay = 0.5;
  AdamW opt(o, {3, 3});
  // zero gradient: m = v = 0, so only the decay moves a weight
  opt.step({{a.data(), zero.data(), 3, true}, {b.data(), zero.data(), 3, false}}, 0.1);
  const float mul = static_cast<float>(1.0 - 0.1 * 0.5);
  for (size_t i = 0; i < 3; ++i) {
    const float before = i == 0 ? 1.0f : i == 1 ? -2.0f : 4.0f;
    CHECK(a[i] == before * mul);
    CHECK(b[i] == before);
  }
  // weight_decay = 0 leaves flagged slots untouched too
  AdamWOptions no_wd;
  no_wd.weight_decay = 0.0;
  AdamW opt2(no_wd, {3});
  std::vector<float> c{1.0f, -2.0f, 4.0f};
  opt2.step({{c.data(), zero.data(), 3, true}}, 0.1);
  CHECK(c == std::vector<float>{1.0f, -2.0f, 4.0f});
}

TEST_CASE("adamw: a non-finite gradient skips the step and changes nothing") {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    TwoSlots t;
    AdamW opt(adamw_options_defaults(), t.sizes());
    opt.step(t.slots(), 1e-3);
    opt.step(t.slots(), 1e-3);  // non-zero state
    const std::vector<float> w = t.w, b = t.b;
    const std::vector<float> m0(opt.exp_avg(0).data, opt.exp_avg(0).data + 6);
    const std::vector<float> v1(opt.exp_avg_sq(1).data, opt.exp_avg_sq(1).data + 3);
    const std::vector<float> m1(opt.exp_avg(1).data, opt.exp_avg(1).data + 3);
    const std::vector<float> v0(opt.exp_avg_sq(0).data, opt.exp_avg_sq(0).data + 6);
    t.gb[2] = bad;
    t.gw[4] = bad;  // slot 0 comes first: it is the one reported
    const AdamWStepResult r = opt.step(t.slots(), 1e-3);
    CHECK(r.skipped);
    CHECK(r.bad_slot == 0);
    CHECK(r.bad_index == 4);
    CHECK(r.step_count == 2);
    CHECK(opt.step_count() == 2);
    CHECK(same_bits(w, t.w.data()));
    CHECK(same_bits(b, t.b.data()));
    CHECK(same_bits(m0, opt.exp_avg(0).data));
    CHECK(same_bits(v0, opt.exp_avg_sq(0).data));
    CHECK(same_bits(m1, opt.exp_avg(1).data));
    CHECK(same_bits(v1, opt.exp_avg_sq(1).data));
    t.gw[4] = 1.0f;
    const AdamWStepResult r2 = opt.step(t.slots(), 1e-3);
    CHECK(r2.skipped);
    CHECK(r2.bad_slot == 1);
    CHECK(r2.bad_index == 2);
  }
  // a finite gradient that overflows once scaled is caught too
  std::vector<float> p{1.0f}, g{std::numeric_limits<float>::max()};
  AdamW opt(adamw_options_defaults(), {1});
  CHECK(opt.step({{p.data(), g.data(), 1, true}}, 1e-3, 4.0f).skipped);
  CHECK(p[0] == 1.0f);
}

TEST_CASE("adamw: state copied out and back in continues bit-identically") {
  TwoSlots a;
  AdamW opt_a(adamw_options_defaults(), a.sizes());
  for (int s = 0; s < 3; ++s) {
    for (float& g : a.gw) g = g * 0.7f + 0.01f;
    opt_a.step(a.slots(), 1e-3 * (s + 1));
  }
  // "checkpoint": params, m, v, step count
  TwoSlots b = a;
  std::vector<std::vector<float>> saved;
  for (size_t k = 0; k < opt_a.num_slots(); ++k) {
    const FloatSpan m = opt_a.exp_avg(k), v = opt_a.exp_avg_sq(k);
    saved.emplace_back(m.data, m.data + m.size);
    saved.emplace_back(v.data, v.data + v.size);
  }
  AdamW opt_b(adamw_options_defaults(), b.sizes());
  for (size_t k = 0; k < opt_b.num_slots(); ++k) {
    const FloatSpan m = opt_b.exp_avg(k), v = opt_b.exp_avg_sq(k);
    REQUIRE(m.size == saved[2 * k].size());
    std::memcpy(m.data, saved[2 * k].data(), m.size * sizeof(float));
    std::memcpy(v.data, saved[2 * k + 1].data(), v.size * sizeof(float));
  }
  opt_b.set_step_count(opt_a.step_count());
  for (int s = 0; s < 4; ++s) {
    for (float& g : a.gw) g = g * -0.9f + 0.02f;
    b.gw = a.gw;
    opt_a.step(a.slots(), 5e-4);
    opt_b.step(b.slots(), 5e-4);
  }
  CHECK(opt_a.step_count() == 7);
  CHECK(opt_b.step_count() == 7);
  CHECK(same_bits(a.w, b.w.data()));
  CHECK(same_bits(a.b, b.b.data()));
  for (size_t k = 0; k < 2; ++k) {
    CHECK(std::memcmp(opt_a.exp_avg(k).data, opt_b.exp_avg(k).data, opt_a.slot_size(k) * sizeof(float)) == 0);
    CHECK(std::memcmp(opt_a.exp_avg_sq(k).data, opt_b.exp_avg_sq(k).data, opt_a.slot_size(k) * sizeof(float)) == 0);
  }
}

TEST_CASE("adamw: bad hyper-parameters and mismatched slots are invalid_argument") {
  auto with = [](auto set) {
    AdamWOptions o;
    set(o);
    return o;
  };
  check_invalid([&] { AdamW(with([](AdamWOptions& o) { o.beta1 = -0.1; }), {1}); });
  check_invalid([&] { AdamW(with([](AdamWOptions& o) { o.beta1 = 1.0; }), {1}); });
  check_invalid([&] { AdamW(with([](AdamWOptions& o) { o.beta2 = 1.5; }), {1}); });
  check_invalid([&] { AdamW(with([](AdamWOptions& o) { o.eps = 0.0; }), {1}); });
  check_invalid([&] { AdamW(with([](AdamWOptions& o) { o.eps = std::nan(""); }), {1}); });
  check_invalid([&] { AdamW(with([](AdamWOptions& o) { o.weight_decay = -1e-3; }), {1}); });
  check_invalid([&] { AdamW(adamw_options_defaults(), {}); });

  TwoSlots t;
  AdamW opt(adamw_options_defaults(), t.sizes());
  check_invalid([&] { opt.step(t.slots(), -1e-3); });
  check_invalid([&] { opt.step(t.slots(), std::numeric_limits<double>::infinity()); });
  check_invalid([&] { opt.step(t.slots(), 1e-3, 0.0f); });
  check_invalid([&] { opt.step({t.slots()[0]}, 1e-3); });  // one slot short
  check_invalid([&] {
    auto s = t.slots();
    s[1].size = 2;
    opt.step(s, 1e-3);
  });
  check_invalid([&] {
    auto s = t.slots();
    s[0].grad = nullptr;
    opt.step(s, 1e-3);
  });
  check_invalid([&] { opt.exp_avg(2); });
  check_invalid([&] { opt.set_step_count(-1); });
  CHECK(opt.step_count() == 0);  // failed calls changed nothing
}

}  // namespace
