// core/train global-norm clipping against a long-double reference, its use
// as AdamW's grad_scale, and gradient accumulation over micro-batches.
#include "core/train/grad_clip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/train/adamw.h"
#include "core/train/grad_accumulation.h"
#include "kernels/error.h"

namespace {

using namespace fp8rl::train;

struct Grads {
  std::vector<std::vector<float>> g;
  std::vector<std::vector<float>> p;
  explicit Grads(float amplitude) {
    std::mt19937 rng(99);
    std::uniform_real_distribution<float> u(-amplitude, amplitude);
    for (size_t n : {size_t{1000}, size_t{17}, size_t{0}, size_t{256}}) {
      g.emplace_back(n);
      p.emplace_back(n, 1.0f);
      for (float& x : g.back()) x = u(rng);
    }
  }
  std::vector<ParamSlot> slots() {
    std::vector<ParamSlot> s;
    for (size_t k = 0; k < g.size(); ++k) s.push_back({p[k].data(), g[k].data(), g[k].size(), k != 1});
    return s;
  }
  long double reference_norm() const {
    long double sum = 0;
    for (const auto& v : g) {
      for (float x : v) sum += static_cast<long double>(x) * x;
    }
    return std::sqrt(sum);
  }
};

TEST_CASE("grad clip: global norm matches a long-double reference, scale as clip_grad_norm_") {
  Grads big(1.0f);
  const long double ref = big.reference_norm();
  const GradClipResult c = clip_grad_norm(big.slots(), 1.0);
  CHECK(c.finite);
  CHECK(std::fabs(static_cast<long double>(c.norm) - ref) <= 1e-14L * ref);
  REQUIRE(c.norm > 1.0);
  CHECK(c.clipped);
  CHECK(c.scale == static_cast<float>(1.0 / (c.norm + 1e-6)));
  CHECK(global_grad_norm(big.slots()) == c.norm);  // deterministic

  // under the limit: no clipping, scale exactly 1
  const GradClipResult loose = clip_grad_norm(big.slots(), 1e6);
  CHECK_FALSE(loose.clipped);
  CHECK(loose.scale == 1.0f);
  CHECK(loose.norm == c.norm);

  // empty slots contribute nothing; all-zero gradients have norm 0
  std::vector<float> zeros(8, 0.0f), p(8, 0.0f);
  const GradClipResult z = clip_grad_norm({{p.data(), zeros.data(), 8, true}}, 1.0);
  CHECK(z.norm == 0.0);
  CHECK_FALSE(z.clipped);
}

TEST_CASE("grad clip: non-finite gradients give finite = false and no scaling") {
  Grads grads(1.0f);
  grads.g[3][7] = std::numeric_limits<float>::infinity();
  const GradClipResult c = clip_grad_norm(grads.slots(), 1.0);
  CHECK_FALSE(c.finite);
  CHECK_FALSE(c.clipped);
  CHECK(c.scale == 1.0f);
  grads.g[3][7] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(clip_grad_norm(grads.slots(), 1.0).norm));
}

TEST_CASE("grad clip: AdamW with grad_scale equals AdamW on gradients scaled in place") {
  Grads a(2.0f), b(2.0f);
  const GradClipResult c = clip_grad_norm(a.slots(), 0.3);
  REQUIRE(c.clipped);
  std::vector<FloatSpan> spans;
  for (auto& v : b.g) spans.push_back({v.data(), v.size()});
  scale_gradients(spans, c.scale);
  std::vector<size_t> sizes;
  for (const auto& v : a.g) sizes.push_back(v.size());
  AdamW opt_a(adamw_options_defaults(), sizes), opt_b(adamw_options_defaults(), sizes);
  opt_a.step(a.slots(), 1e-3, c.scale);
  opt_b.step(b.slots(), 1e-3);
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 0) continue;  // an empty slot has no storage (memcmp must not see its null pointer)
    CHECK(std::memcmp(a.p[k].data(), b.p[k].data(), sizes[k] * sizeof(float)) == 0);
    CHECK(std::memcmp(opt_a.exp_avg_sq(k).data, opt_b.exp_avg_sq(k).data, sizes[k] * sizeof(float)) == 0);
  }
}

TEST_CASE("grad clip: bad max_norm is invalid_argument") {
  Grads g(1.0f);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    try {
      clip_grad_norm(g.slots(), bad);
      FAIL("expected invalid_argument");
    } catch (const fp8rl::Error& e) {
      CHECK(e.status() == fp8rl::Status::invalid_argument);
    }
  }
}

TEST_CASE("grad accumulation: scaled sum in add order, zeroed between steps") {
  GradAccumulator acc({3, 2});
  acc.begin_step(4);
  CHECK(acc.scale() == 0.25f);
  const float mb[4][5] = {{1, 2, 3, 4, 5}, {0.5f, -2, 1, 0, 1}, {-1, 0, 0.25f, 8, -3}, {2, 2, 2, 2, 2}};
  for (int m = 0; m < 4; ++m) {
    CHECK_FALSE(acc.complete());
    acc.add(0, mb[m], 3);
    acc.add(1, mb[m] + 3, 2);
  }
  CHECK(acc.complete());
  // power-of-two micro-batch count: every operation is exact here
  const float want[5] = {2.5f / 4, 2.0f / 4, 6.25f / 4, 14.0f / 4, 5.0f / 4};
  for (int i = 0; i < 3; ++i) CHECK(acc.grad(0)[i] == want[i]);
  for (int i = 0; i < 2; ++i) CHECK(acc.grad(1)[i] == want[3 + i]);

  // three micro-batches: the sum is taken in add order with scale float(1/3)
  acc.begin_step(3);
  CHECK(acc.grad(0)[0] == 0.0f);
  CHECK(acc.grad(1)[1] == 0.0f);
  const float third = static_cast<float>(1.0 / 3.0);
  CHECK(acc.scale() == third);
  float expect = 0.0f;
  for (int m = 0; m < 3; ++m) {
    acc.add(0, mb[m], 3);
    const float term = third * mb[m][1];
    expect = expect + term;
  }
  CHECK(acc.grad(0)[1] == expect);
  CHECK_FALSE(acc.complete());  // slot 1 got nothing

  auto invalid = [](auto f) {
    try {
      f();
      return false;
    } catch (const fp8rl::Error& e) {
      return e.status() == fp8rl::Status::invalid_argument;
    }
  };
  CHECK(invalid([&] { acc.add(0, mb[0], 3); }));  // a fourth add of three
  CHECK(invalid([&] { acc.add(1, mb[0], 3); }));  // size mismatch
  CHECK(invalid([&] { acc.add(2, mb[0], 3); }));  // no such slot
  CHECK(invalid([&] { acc.add(1, nullptr, 2); }));
  CHECK(invalid([&] { acc.begin_step(0); }));
  CHECK(invalid([] {
    GradAccumulator fresh({2});
    const float g[2] = {1, 2};
    fresh.add(0, g, 2);
  }));
  CHECK(invalid([] { GradAccumulator none({}); }));
}

}  // namespace
