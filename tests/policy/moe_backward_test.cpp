// The backward of Mixture-of-Experts routing and combine
// (kernels/common/moe_routing_math.h through the CPU backend's
// moe_route_backward and moe_combine_backward) against float64: central
// differences of the gate weights' and the probabilities' loss with the
// choice held fixed, and the router's input and weight gradients as float64
// matrix products of the same dlogits.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/backend_factory.h"
#include "core/logger.h"
#include "kernels/common/moe_routing_math.h"
#include "policy_test_support.h"

namespace fp8rl::test {
namespace {

std::vector<double> softmax64(const std::vector<double>& z) {
  double max = z[0], sum = 0.0;
  for (double v : z) max = std::max(max, v);
  std::vector<double> p;
  for (double v : z) p.push_back(std::exp(v - max));
  for (double v : p) sum += v;
  for (double& v : p) v /= sum;
  return p;
}

// L(z) = sum_j g_j w_j + sum_e a_e p_e with the choice fixed, in float64.
double routing_loss(const std::vector<double>& z, const std::vector<int32_t>& chosen, bool normalize,
                    const std::vector<double>& g, const std::vector<double>& a) {
  const std::vector<double> p = softmax64(z);
  double total = 0.0, loss = 0.0;
  for (int32_t e : chosen) total += p[static_cast<size_t>(e)];
  for (size_t j = 0; j < chosen.size(); ++j)
    loss += g[j] * p[static_cast<size_t>(chosen[j])] / (normalize ? total : 1.0);
  for (size_t e = 0; e < p.size(); ++e) loss += a[e] * p[e];
  return loss;
}

std::vector<float> pattern(size_t n, double scale, double phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(scale * std::sin(0.7 * static_cast<double>(i) + phase));
  return v;
}

}  // namespace

TEST_CASE("route_backward_token: dL/dlogits against float64 central differences, with and without renormalisation") {
  const int64_t experts = 7, k = 3;
  const std::vector<float> logits = {0.3f, -1.2f, 2.5f, 0.9f, 2.4f, -0.1f, 1.1f};
  const std::vector<float> dweights = {0.8f, -1.5f, 0.35f};
  const std::vector<float> aux = pattern(static_cast<size_t>(experts), 0.2, 1.0);
  for (const bool normalize : {false, true}) {
    for (const bool with_aux : {false, true}) {
      CAPTURE(normalize);
      CAPTURE(with_aux);
      std::vector<int32_t> chosen(static_cast<size_t>(k));
      std::vector<float> weights(static_cast<size_t>(k)), dlogits(static_cast<size_t>(experts));
      route_token(logits.data(), experts, k, normalize, chosen.data(), weights.data());
      route_backward_token(logits.data(), experts, k, normalize, chosen.data(), weights.data(), dweights.data(),
                           with_aux ? aux.data() : nullptr, dlogits.data());
      const std::vector<double> g(dweights.begin(), dweights.end());
      std::vector<double> a(static_cast<size_t>(experts), 0.0);
      if (with_aux) a.assign(aux.begin(), aux.end());
      const double h = 1e-6;
      for (int64_t e = 0; e < experts; ++e) {
        std::vector<double> up(logits.begin(), logits.end()), down = up;
        up[static_cast<size_t>(e)] += h;
        down[static_cast<size_t>(e)] -= h;
        const double fd = (routing_loss(up, chosen, normalize, g, a) - routing_loss(down, chosen, normalize, g, a)) / (2 * h);
        CAPTURE(e);
        CHECK(dlogits[static_cast<size_t>(e)] == doctest::Approx(fd).epsilon(1e-5).scale(1.0));  // exact 0s come out ~1e-10
      }
    }
  }
}

TEST_CASE("moe_route_backward: the router's input and weight gradients are float64 products of dlogits") {
  const int64_t tokens = 9, hidden = 37, experts = 5, k = 2;
  auto backend = create_backend(cpu_request(2), Logger());
  const std::vector<float> x = pattern(static_cast<size_t>(tokens * hidden), 1.5, 0.1);
  const std::vector<float> router = pattern(static_cast<size_t>(experts * hidden), 0.3, 2.0);
  std::vector<float> logits(static_cast<size_t>(tokens * experts)), weights(static_cast<size_t>(tokens * k));
  std::vector<int32_t> chosen(static_cast<size_t>(tokens * k));
  MoeRouteArgs route;
  route.x = x.data();
  route.router = router.data();
  route.tokens = tokens;
  route.hidden = hidden;
  route.experts = experts;
  route.top_k = k;
  route.normalize = true;
  route.logits = logits.data();
  route.chosen = chosen.data();
  route.weights = weights.data();
  backend->moe_route(route);

  const std::vector<float> dweights = pattern(static_cast<size_t>(tokens * k), 1.0, 0.5);
  const std::vector<float> dx_before = pattern(static_cast<size_t>(tokens * hidden), 0.01, 3.0);
  const std::vector<float> drouter_before = pattern(static_cast<size_t>(experts * hidden), 0.01, 4.0);
  std::vector<float> dlogits(logits.size()), dx = dx_before, drouter = drouter_before;
  MoeRouteBackwardArgs args;
  args.x = x.data();
  args.router = router.data();
  args.logits = logits.data();
  args.used = chosen.data();
  args.weights = weights.data();
  args.dweights = dweights.data();
  args.tokens = tokens;
  args.hidden = hidden;
  args.experts = experts;
  args.top_k = k;
  args.normalize = true;
  args.dlogits = dlogits.data();
  args.dx = dx.data();
  args.drouter = drouter.data();
  backend->moe_route_backward(args);

  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < hidden; ++h) {
      double sum = dx_before[static_cast<size_t>(t * hidden + h)];
      for (int64_t e = 0; e < experts; ++e)
        sum += static_cast<double>(dlogits[static_cast<size_t>(t * experts + e)]) * router[static_cast<size_t>(e * hidden + h)];
      CHECK(dx[static_cast<size_t>(t * hidden + h)] == doctest::Approx(sum).epsilon(1e-5).scale(1e-6));
    }
  }
  for (int64_t e = 0; e < experts; ++e) {
    for (int64_t h = 0; h < hidden; ++h) {
      double sum = drouter_before[static_cast<size_t>(e * hidden + h)];
      for (int64_t t = 0; t < tokens; ++t)  // the router saw x rounded to BF16
        sum += static_cast<double>(dlogits[static_cast<size_t>(t * experts + e)]) *
               bf16_round(x[static_cast<size_t>(t * hidden + h)]);
      CHECK(drouter[static_cast<size_t>(e * hidden + h)] == doctest::Approx(sum).epsilon(1e-5).scale(1e-6));
    }
  }
}

TEST_CASE("moe_combine_backward: each slot's row gets weight * dout, each weight dout . its expert's row") {
  const int64_t tokens = 3, hidden = 4, k = 2;
  const std::vector<float> dout = {1, 2, 3, 4, -1, 0, 2, 1, 0.5f, 0.5f, -2, 3};
  const std::vector<float> expert_out = pattern(static_cast<size_t>(tokens * k * hidden), 2.0, 0.3);
  const std::vector<int64_t> slots = {4, 0, 2, 5, 1, 3};  // a permutation of the six rows
  const std::vector<float> weights = {0.25f, 0.75f, 0.5f, 0.5f, 1.0f, -0.125f};
  std::vector<float> dexpert(expert_out.size()), dweights(weights.size());
  auto backend = create_backend(cpu_request(1), Logger());
  MoeCombineBackwardArgs args;
  args.dout = dout.data();
  args.expert_out = expert_out.data();
  args.slot_rows = slots.data();
  args.weights = weights.data();
  args.tokens = tokens;
  args.hidden = hidden;
  args.top_k = k;
  args.expert_rows = tokens * k;
  args.dexpert_out = dexpert.data();
  args.dweights = dweights.data();
  backend->moe_combine_backward(args);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const size_t slot = static_cast<size_t>(t * k + j), row = static_cast<size_t>(slots[slot]);
      double dot = 0.0;
      for (int64_t h = 0; h < hidden; ++h) {
        const size_t i = static_cast<size_t>(t * hidden + h);
        CHECK(dexpert[row * static_cast<size_t>(hidden) + static_cast<size_t>(h)] == weights[slot] * dout[i]);
        dot += static_cast<double>(dout[i]) * expert_out[row * static_cast<size_t>(hidden) + static_cast<size_t>(h)];
      }
      CHECK(dweights[slot] == doctest::Approx(dot).epsilon(1e-6));
    }
  }
}

}  // namespace fp8rl::test
